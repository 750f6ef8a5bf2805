// Hands a small blob (NCCL's unique id) from rank 0 to every rank, within a timeout: through a
// file in a directory all ranks see (the default, one node), or over TCP from rank 0 at
// MASTER_ADDR:MASTER_PORT (torchrun's variables, several nodes). A rank that never arrives --
// rank 0 that never publishes, or a peer that never connects -- ends in a RuntimeError that
// says who and how long, never a hang.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "replay/rank_env.hpp"

namespace shardsim::replay {

struct RendezvousSpec {
  std::filesystem::path dir;  // file rendezvous: DIR/<name>.<run_id>
  bool tcp = false;           // TCP rendezvous at env.master_addr : env.master_port
  double timeout = 60;        // seconds
};

// Rank 0 passes `blob` and gets it back; other ranks pass anything and get rank 0's.
[[nodiscard]] std::vector<char> share_from_rank0(const RankEnv& env, const RendezvousSpec& spec, const std::string& name,
                                                 std::vector<char> blob);

}  // namespace shardsim::replay
