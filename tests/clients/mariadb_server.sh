# SPDX-License-Identifier: MIT
# A private MariaDB server for tests and benchmarks (sourced): a datadir
# made by mariadb-install-db, mariadbd started by hand (never the system
# service: no option files, no network, its own socket and pid file), and
# the client commands that talk to it. InnoDB is set up for native AIO on
# buffered files, the way the libaio drop-in serves it.
#
# The caller sets, before calling these:
#   md_data     the datadir (on disk)
#   md_sock     the unix socket path (short: 107 bytes at most)
#   md_prefix   an array: what runs mariadbd (empty, or fsaio-run ...)
#   md_opts     an array of extra mariadbd options (may be empty)
# and reads md_pid (the running server) and md_log (its error log).

md_fail() { echo "FAIL: $*"; exit 1; }

# md_missing: the programs this needs that are not installed, if any.
md_missing() {
	local p missing=
	for p in mariadbd mariadb-install-db mariadb mariadb-admin mariadb-check sysbench; do
		command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || missing="$missing $p"
	done
	echo "${missing# }"
}

md_mariadbd() {
	command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd
}

# As root the server must be told to stay root; otherwise it runs as the
# caller.
md_user_opts() {
	[ "$(id -u)" -ne 0 ] || echo --user=root
}

# The server's own temporary directory, beside the datadir: nothing else
# creates or removes files there.
md_tmpdir() {
	echo "$md_data.tmp"
}

# md_install: a fresh datadir with the system tables only.
md_install() {
	mkdir -p "$md_data" "$(md_tmpdir)"
	# shellcheck disable=SC2046
	mariadb-install-db --no-defaults --datadir="$md_data" --tmpdir="$(md_tmpdir)" $(md_user_opts) \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$md_data.install.log" 2>&1 ||
		md_fail "mariadb-install-db: $(cat "$md_data.install.log")"
}

# md_supports OPTION: mariadbd knows --OPTION.
md_supports() {
	"$(md_mariadbd)" --no-defaults --verbose --help 2>/dev/null | grep -q -- "^  --$1[= ]"
}

# md_start LOG: start the server with its error log in LOG (appended, so
# give each start its own file) and wait until it answers. Returns 1 if
# it died before it answered (the log says why).
md_start() {
	md_log=$1
	local aio=() deadline=$((SECONDS + 180))
	md_supports innodb-linux-aio && aio=(--innodb-linux-aio=aio)
	# shellcheck disable=SC2046
	"${md_prefix[@]}" "$(md_mariadbd)" --no-defaults $(md_user_opts) \
		--datadir="$md_data" --tmpdir="$(md_tmpdir)" --socket="$md_sock" --pid-file="$md_sock.pid" \
		--skip-networking --log-error="$md_log" --open-files-limit=1024 \
		--innodb-use-native-aio=ON "${aio[@]}" \
		--innodb-flush-method=fsync --innodb-buffer-pool-size=8M \
		--innodb-buffer-pool-load-at-startup=OFF \
		--innodb-buffer-pool-dump-at-shutdown=OFF \
		"${md_opts[@]}" </dev/null >>"$md_log" 2>&1 &
	md_pid=$!
	while [ "$SECONDS" -lt "$deadline" ]; do
		kill -0 "$md_pid" 2>/dev/null || { wait "$md_pid" 2>/dev/null || true; md_pid=; return 1; }
		mariadb-admin --no-defaults -S "$md_sock" -uroot --connect-timeout=2 ping \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	md_fail "mariadbd did not answer within 180 s: $(tail -20 "$md_log")"
}

# md_stop: a clean shutdown; the server must exit with status 0.
md_stop() {
	local rc=0
	mariadb-admin --no-defaults -S "$md_sock" -uroot shutdown ||
		md_fail "mariadb-admin shutdown failed"
	wait "$md_pid" || rc=$?
	md_pid=
	[ "$rc" = 0 ] || md_fail "mariadbd exited with status $rc on shutdown: $(tail -20 "$md_log")"
}

# md_kill: SIGKILL, no shutdown of any kind.
md_kill() {
	kill -9 "$md_pid"
	wait "$md_pid" 2>/dev/null || true
	md_pid=
}

# md_evict: write the datadir's files back and drop them from the page
# cache (the server stopped), so that the next start reads from the disk.
md_evict() {
	local f
	find "$md_data" -type f | while read -r f; do
		dd if=/dev/null of="$f" oflag=nocache conv=notrunc,fdatasync count=0 status=none
	done
}

# md_sql SQL: run SQL, print the result without headers.
md_sql() {
	mariadb --no-defaults -S "$md_sock" -uroot -N -B -e "$1"
}

# md_sysbench TEST ARGS...: sysbench TEST on the server's sbtest database.
md_sysbench() {
	local test=$1
	shift
	sysbench "$test" --db-driver=mysql --mysql-socket="$md_sock" --mysql-user=root \
		--mysql-db=sbtest "$@"
}

# md_cleanup: kill a server still running (on failure), as an EXIT trap.
md_cleanup() {
	if [ -n "${md_pid:-}" ]; then
		kill -9 "$md_pid" 2>/dev/null || true
		wait "$md_pid" 2>/dev/null || true
	fi
}
