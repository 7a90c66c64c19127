/*
 * QV_DCHECK(expr): an invariant of the library's own state, checked in
 * debug builds. When QV_DEBUG is defined (CMake defines it for the Debug
 * build type and for every sanitizer build, see the top CMakeLists.txt), a
 * false expression prints "file:line: QV_DCHECK(expr) failed" to stderr and
 * aborts, so the bug stops where it starts instead of travelling on as
 * wrong data. Without QV_DEBUG the expression is not evaluated at all.
 *
 * It checks what the library itself computed (counts a decoder produced,
 * bytes a reservation holds, a queue's length), never input: hostile bytes
 * and bad arguments are errors (base/corrupt.h, qv_error_set), in every
 * build. The expression must have no side effects.
 */
#ifndef QV_BASE_DCHECK_H
#define QV_BASE_DCHECK_H

#ifdef QV_DEBUG
void qv__dcheck_fail(const char *file, int line, const char *expr);
#define QV_DCHECK(expr) \
    ((expr) ? (void)0 : qv__dcheck_fail(__FILE__, __LINE__, #expr))
#else
/* sizeof keeps the expression type-checked without evaluating it. */
#define QV_DCHECK(expr) ((void)sizeof(!(expr)))
#endif

#endif
