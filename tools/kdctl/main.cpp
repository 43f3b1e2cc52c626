// kdctl: thin main; every subcommand lives in kdispatch::kdctl.
#include "kdctl.hpp"

int main(int argc, char** argv) { return kd::kdctl::run(argc, argv); }
