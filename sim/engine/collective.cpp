#include "engine/collective.hpp"

namespace shardsim::engine {

ClusterView cluster_view(const config::TopologyConfig& topo) {
  ClusterView v;
  v.gpus_per_node = topo.node.gpus;
  v.nvlink = topo.node.nvlink;
  v.nic = topo.node.nic;
  v.switch_latency = topo.fabric.switch_latency.value();
  v.nics_per_node = topo.node.nics;
  v.nvls = topo.node.nvls;
  v.nvlink_mesh = topo.node.nvlink_mesh;
  v.arch = topo.gpu.arch;
  v.cpu = topo.host.cpu;
  return v;
}

}  // namespace shardsim::engine
