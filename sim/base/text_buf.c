/* text_buf.c — the growable byte buffer (contract in text_buf.h). */
#include "sim/base/text_buf.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"

void text_put(text_buf *t, const char *p, size_t n) {
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : (size_t)1 << 16;
        while (t->n + n + 1 > cap) cap *= 2;
        t->s = moe_xrealloc(t->s, cap, 1);
        t->cap = cap;
    }
    memcpy(t->s + t->n, p, n);
    t->n += n;
    t->s[t->n] = '\0';
}

void text_puts(text_buf *t, const char *p) { text_put(t, p, strlen(p)); }

void text_free(text_buf *t) {
    free(t->s);
    *t = (text_buf){0};
}
