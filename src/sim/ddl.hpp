// Verbatim nsys CREATE TABLE statements of the tables straggler-sim writes.
#pragma once
#include <vector>

namespace sim {
extern const std::vector<const char*> kDdl325;  // nsys 2026.2.1, schema 3.25.0
extern const std::vector<const char*> kDdl30;   // nsys 2022.4.2, schema 3.0.0
}  // namespace sim
