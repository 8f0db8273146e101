/* SPDX-License-Identifier: MIT */
/*
 * A doubly linked FIFO threaded through two pointer fields of its elements,
 * kept as a head and a tail: append at the tail, put back at the head and
 * unlink anywhere in O(1), nothing allocated. The element type and the
 * names of its link fields are the caller's (the public struct fsaio_req
 * carries next_ and prev_), so these are macros. An unlinked element has both links NULL.
 * The caller holds whatever lock guards the list.
 */
#ifndef FSAIO_LIST_H
#define FSAIO_LIST_H

#include <stddef.h>

#define FSAIO__LIST_APPEND(head, tail, e, next, prev)                  \
	do {                                                           \
		(e)->next = NULL;                                      \
		(e)->prev = (tail);                                    \
		if (tail)                                              \
			(tail)->next = (e);                            \
		else                                                   \
			(head) = (e);                                  \
		(tail) = (e);                                          \
	} while (0)

#define FSAIO__LIST_PREPEND(head, tail, e, next, prev)                 \
	do {                                                           \
		(e)->prev = NULL;                                      \
		(e)->next = (head);                                    \
		if (head)                                              \
			(head)->prev = (e);                            \
		else                                                   \
			(tail) = (e);                                  \
		(head) = (e);                                          \
	} while (0)

/* e is in the list (a copy of an element is not: its neighbours, or the
 * head, point at the element). */
#define FSAIO__LIST_HAS(head, e, next, prev)                           \
	((e)->prev ? (e)->prev->next == (e) : (head) == (e))

#define FSAIO__LIST_UNLINK(head, tail, e, next, prev)                  \
	do {                                                           \
		if ((e)->prev)                                         \
			(e)->prev->next = (e)->next;                   \
		else                                                   \
			(head) = (e)->next;                            \
		if ((e)->next)                                         \
			(e)->next->prev = (e)->prev;                   \
		else                                                   \
			(tail) = (e)->prev;                            \
		(e)->next = (e)->prev = NULL;                          \
	} while (0)

#endif /* FSAIO_LIST_H */
