// A profile as the analyses see it: read by the reader its first bytes pick (ranks/profile_reader),
// then given NCCL's meaning by the format-independent pass (collectives::annotate_nccl), as the
// driver does. Tests of what a reader alone produces use ranks::read_profile.
#pragma once
#include <string>
#include <vector>

#include "collectives/nccl_annotate.hpp"
#include "ranks/profile_reader.hpp"

using collectives::read_annotated;  // the library's: read, then annotated
