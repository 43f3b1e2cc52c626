// The C API boundary: the only place in libkdispatch.so that catches exceptions.
#include "kdispatch/kdispatch.h"

extern "C" const char* kd_version(int* major, int* minor, int* patch) {
  if (major) *major = KD_VERSION_MAJOR;
  if (minor) *minor = KD_VERSION_MINOR;
  if (patch) *patch = KD_VERSION_PATCH;
  return KD_VERSION_STRING;
}
