/* text_buf.c — the growable byte buffer (contract in text_buf.h). */
#include "sim/base/text_buf.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"

void text_reserve(text_buf *t, size_t more) {
    if (t->n + more + 1 <= t->cap) return;
    size_t cap = t->cap ? t->cap : (size_t)1 << 16;
    while (t->n + more + 1 > cap) cap *= 2;
    t->s = moe_xrealloc(t->s, cap, 1);
    t->cap = cap;
}

/* Digits from the last one back, into the end of a buffer long enough for 2^64 - 1 (20 digits):
 * snprintf's format parsing cost more than the digits in the trace writer's profile. */
void text_put_ull(text_buf *t, unsigned long long v) {
    char buf[20];
    size_t i = sizeof buf;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    text_put(t, buf + i, sizeof buf - i);
}

void text_put_ll(text_buf *t, long long v) {
    if (v < 0) text_put(t, "-", 1);
    text_put_ull(t, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
}

void text_puts(text_buf *t, const char *p) { text_put(t, p, strlen(p)); }

void text_free(text_buf *t) {
    free(t->s);
    *t = (text_buf){0};
}
