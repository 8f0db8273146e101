/* SPDX-License-Identifier: MIT */
/*
 * Private to the poller (poller.c, poller_table.c): its entries, one per
 * open file with parked requests, and the tables that find them.
 */
#ifndef FSAIO_POLLER_TABLE_H
#define FSAIO_POLLER_TABLE_H

#include "poller.h"
#include "req.h"

enum { DIR_READ, DIR_WRITE, DIR_POLL, NDIR };

/* The parked requests of one open file; all fields under poller.lock. */
struct fsaio__pfd {
	struct fsaio_req *head[NDIR], *tail[NDIR];
	int fd;                 /* the engine's duplicate of the caller's fd:
				 * the file the requests are bound to, the
				 * epoll key, and what the poller calls on */
	int alias;              /* the caller's fd number it was made for;
				 * -1 once that number names another file */
	uint32_t armed_ev;      /* epoll events of the last arm */
	bool armed;             /* armed and not yet reported to the thread */
	bool registered;        /* added to the epoll set (it may have dropped
				 * it since: a close removes a file) */
};

/* The entry whose duplicate is fd (the epoll key), or NULL. */
struct fsaio__pfd *fsaio__pfd_by_key(struct fsaio__poller *pl, int fd);
/* The entry last made for the caller's fd number, or NULL. */
struct fsaio__pfd *fsaio__pfd_by_alias(struct fsaio__poller *pl, int fd);
/* The entry for the file r's fd names now (made, with a duplicate, if
 * needed); NULL and *err set when no descriptor or memory is left. */
struct fsaio__pfd *fsaio__pfd_for(struct fsaio__poller *pl, const struct fsaio_req *r, int *err);
bool fsaio__pfd_idle(const struct fsaio__pfd *p);
/* Out of epoll and the tables, freed; returns its duplicate, to be closed
 * once poller.lock is released. */
int fsaio__pfd_drop(struct fsaio__poller *pl, struct fsaio__pfd *p);
/* Every entry and its duplicate (nothing waits any more). */
void fsaio__pfd_free_all(struct fsaio__poller *pl);

#endif /* FSAIO_POLLER_TABLE_H */
