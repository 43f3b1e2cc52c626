// kdispatch-worker: one per GPU, started by kdispatchd; runs untrusted candidates so that a hang
// or a crash takes down only this process. All of it lives in search/src/worker/.
#include "worker/worker_process.hpp"

int main(int argc, char** argv) { return kd::worker::worker_main(argc, argv); }
