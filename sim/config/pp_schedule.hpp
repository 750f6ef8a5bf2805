// Pipeline schedules (parallelism.pp_schedule) by torchtitan's names, and how many model stages a
// pipeline rank runs under each unless parallelism.pp_stages_per_rank says otherwise: what the
// loader resolves and what `shardsim tune` counts when it searches schedules.
#pragma once

#include <optional>
#include <string_view>

#include "config/scenario.hpp"

namespace shardsim::config {

// gpipe, 1f1b, interleaved_1f1b, zbv, interleaved_zb; nullopt for any other name.
[[nodiscard]] std::optional<PpSchedule> pp_schedule_named(std::string_view name);

// Two for the schedules that run several model stages a rank (interleaved 1F1B, ZB-V, interleaved
// ZB), one for GPipe and 1F1B.
[[nodiscard]] int default_stages_per_rank(PpSchedule schedule);

}  // namespace shardsim::config
