// Puts a freshly read RankTimeline in canonical form: every column group sorted by start (ties by
// end), and the capture window set. Readers call it last; analyses rely on it.
#pragma once
#include "ranks/timeline.hpp"

namespace ranks {
void sort_timeline(RankTimeline& tl);
}
