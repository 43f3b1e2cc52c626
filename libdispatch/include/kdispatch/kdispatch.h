/* kdispatch C API.
 *
 * Link libkdispatch.so and include this header. The full contract of each function is documented
 * at its declaration. Nothing in this API throws, aborts or exits.
 */
#ifndef KDISPATCH_KDISPATCH_H
#define KDISPATCH_KDISPATCH_H

#ifdef __cplusplus
extern "C" {
#endif

#define KD_VERSION_MAJOR 0
#define KD_VERSION_MINOR 1
#define KD_VERSION_PATCH 0
#define KD_VERSION_STRING "0.1.0"

/* Returns the library's version string ("0.1.0") and stores its parts where the pointers are not
 * NULL. Thread-safe; the string is static. */
const char* kd_version(int* major, int* minor, int* patch);

#ifdef __cplusplus
}
#endif

#endif /* KDISPATCH_KDISPATCH_H */
