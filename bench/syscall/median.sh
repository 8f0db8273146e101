# SPDX-License-Identifier: MIT
# Sourced by the scripts of bench/syscall.
# median FILE FIELD PREFIX: the median of the values that follow the word
# FIELD on the lines of FILE beginning with the words PREFIX.
median() {
	awk -v p="$3 " -v f="$2" 'index($0, p) == 1 { for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$1" |
		sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
