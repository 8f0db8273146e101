/* SPDX-License-Identifier: MIT */
/*
 * readme_facts README.md: the sizes README.md states, checked against the
 * header: "`struct fsaio_req` (N bytes)" is sizeof(struct fsaio_req), and
 * the completion queue's "(N bytes per `queue_depth` slot)" is
 * sizeof(struct fsaio_event), one event per slot. The text is read with
 * its line breaks as spaces, so a fact may wrap. Exit 0 when every fact is
 * found and right, 1 otherwise, one line per wrong or missing fact.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsaio.h"

/* The README with every run of white space as one space. */
static char *load(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n = 0;
	int ch, space = 0;

	if (!f || fseek(f, 0, SEEK_END) != 0)
		return NULL;
	text = malloc((size_t)ftell(f) + 1);
	rewind(f);
	while (text && (ch = fgetc(f)) != EOF) {
		if (ch == ' ' || ch == '\n' || ch == '\t') {
			space = 1;
			continue;
		}
		if (space && n)
			text[n++] = ' ';
		space = 0;
		text[n++] = (char)ch;
	}
	fclose(f);
	if (text)
		text[n] = 0;
	return text;
}

/* The number right after the first occurrence of before, if after follows
 * it; -1 when the fact is not there in that form. */
static long fact(const char *text, const char *before, const char *after)
{
	const char *p = strstr(text, before);
	char *end;
	long v;

	if (!p)
		return -1;
	p += strlen(before);
	v = strtol(p, &end, 10);
	if (end == p || strncmp(end, after, strlen(after)) != 0)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *before, *after, *what;
		size_t value;
	} facts[] = {
		{ "`struct fsaio_req` (", " bytes)", "sizeof(struct fsaio_req)",
		  sizeof(struct fsaio_req) },
		{ "completion queue (", " bytes per `queue_depth` slot)", "sizeof(struct fsaio_event)",
		  sizeof(struct fsaio_event) },
	};
	char *text;
	int status = 0;

	if (argc != 2 || !(text = load(argv[1]))) {
		fprintf(stderr, "usage: readme_facts README.md (readable)\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
		long v = fact(text, facts[i].before, facts[i].after);

		if (v < 0) {
			printf("readme_facts: no \"%sN%s\" in %s\n", facts[i].before, facts[i].after, argv[1]);
			status = 1;
		} else if ((size_t)v != facts[i].value) {
			printf("readme_facts: %s says %ld for %s, which is %zu\n", argv[1], v,
			       facts[i].what, facts[i].value);
			status = 1;
		} else {
			printf("readme_facts: %s = %zu, as %s says\n", facts[i].what, facts[i].value, argv[1]);
		}
	}
	free(text);
	return status;
}
