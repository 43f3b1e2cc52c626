#include "commands.hpp"

namespace kd::kdctl {

namespace {
constexpr Command kCommands[] = {
    {"devices", "List the CUDA devices this machine has, with the key's device part for each",
     setup_devices},
    {"search", "Run one branching search for a key in the foreground and print the tree", setup_search},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

}  // namespace kd::kdctl
