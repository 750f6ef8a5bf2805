// Each setting is declared once, in its ParamSpec: its default must lie within its own bounds and
// among its own choices, and a scenario that writes only the required keys must give the
// defaults the plain structs start from (which the engine and the report rely on).
#include <doctest/doctest.h>

#include "config/file_source.hpp"
#include "config/scenario.hpp"
#include "config/topology.hpp"
#include "core/config_node.hpp"
#include "core/reader.hpp"

using namespace shardsim;

TEST_CASE("every default lies within its own range and among its own choices") {
  std::vector<Schema> all = config::scenario_schemas();
  for (const auto& s : config::topology_schemas()) all.push_back(s);
  int checked = 0;
  for (const auto& schema : all) {
    for (const auto& p : schema.params) {
      // Required, optional, mappings and lists, and "auto" (simulation.steps: a word beside its range) are not bounded values.
      if (p.default_value.empty() || p.default_value == "-" || p.default_value == "auto" || p.default_value.front() == '{' ||
          p.default_value.front() == '[')
        continue;
      INFO(schema.name << "." << p.name << " = " << p.default_value);
      ConfigNode root = ConfigNode::make_map({});
      root.set(p.name, ConfigNode::make_scalar(std::string(p.default_value), {}), {});
      const Reader r(root, std::string(schema.name), schema);
      if (!p.choices.empty()) {
        CHECK_NOTHROW((void)r.choice(p.name));
        ++checked;
      } else if (p.range && !p.range->dimension) {
        CHECK_NOTHROW((void)r.number(p.name));
        ++checked;
      } else if (p.range) {
        CHECK_NOTHROW((void)r.quantity(p.name, *p.range->dimension));
        ++checked;
      }
    }
  }
  CHECK(checked > 40);
}

TEST_CASE("a scenario with only its required keys gives the structs' defaults") {
  config::MemoryFiles files;
  files.add("topo.yaml",
            "name: t\ngpu: {model: g, memory: 80GiB, peak_flops: {bf16: 989TFLOPS, fp32: 67TFLOPS}, hbm_bandwidth: 3.35TB/s}\n"
            "node: {nvlink: {bandwidth: 450GB/s}, nic: {bandwidth: 400Gbps}}\n");
  files.add("s.yaml", "cluster: {topology: topo.yaml}\nmodel: {preset: llama3.1-8b}\ntraining: {seq_len: 1024}\n");
  const auto s = config::load_scenario("s.yaml", {}, files);
  const config::FsdpConfig f;
  CHECK(s.fsdp.version == f.version);
  CHECK(s.fsdp.sharding == f.sharding);
  CHECK(s.fsdp.wrap.name == "module");
  CHECK(s.fsdp.backward_prefetch == f.backward_prefetch);
  CHECK(s.fsdp.backward_prefetch_depth == f.backward_prefetch_depth);
  CHECK(s.fsdp.forward_prefetch == f.forward_prefetch);
  CHECK(s.fsdp.limit_all_gathers == f.limit_all_gathers);
  CHECK(s.fsdp.max_inflight_all_gathers == f.max_inflight_all_gathers);
  CHECK_FALSE(s.fsdp.reshard_after_forward.has_value());
  CHECK(s.fsdp.keep_last_unit_unsharded == f.keep_last_unit_unsharded);
  CHECK(s.fsdp.backward_hook_order == f.backward_hook_order);
  CHECK(s.fsdp.bucket_size.value() == f.bucket_size.value());
  CHECK(s.fsdp.mixed_precision.enabled == f.mixed_precision.enabled);
  CHECK(s.fsdp.cpu_offload == f.cpu_offload);
  const config::Zero3Config z;
  CHECK(s.fsdp.zero3.prefetch_bucket_size == z.prefetch_bucket_size);
  CHECK(s.fsdp.zero3.max_live_parameters == z.max_live_parameters);
  CHECK(s.fsdp.zero3.max_reuse_distance == z.max_reuse_distance);
  CHECK(s.fsdp.zero3.param_persistence_threshold == z.param_persistence_threshold);
  CHECK(s.fsdp.zero3.reduce_bucket_size == z.reduce_bucket_size);
  CHECK(s.fsdp.zero3.overlap_comm == z.overlap_comm);
  const config::TrainingConfig t;
  CHECK(s.training.micro_batch == t.micro_batch);
  CHECK(s.training.grad_accum == t.grad_accum);
  CHECK(s.training.no_sync == t.no_sync);
  CHECK(s.training.optimizer == t.optimizer);
  CHECK(s.training.activation_checkpointing == t.activation_checkpointing);
  CHECK(s.training.checkpoint_every == t.checkpoint_every);
  CHECK(s.training.dtype == t.dtype);
  const config::SimulationConfig sim;
  CHECK(s.simulation.steps == sim.steps);
  CHECK(s.simulation.flows == sim.flows);
  CHECK(s.simulation.mode == sim.mode);
  CHECK(s.simulation.max_ops.value == sim.max_ops.value);
  CHECK(s.simulation.max_op_instances.value == sim.max_op_instances.value);
  CHECK(s.simulation.max_wall_time.value.value() == sim.max_wall_time.value.value());
  const config::ClusterConfig c;
  CHECK(s.cluster.nodes == c.nodes);
  CHECK(s.cluster.jobs == c.jobs);
  CHECK(s.cluster.placement == c.placement);
  CHECK_FALSE(s.stragglers.any());
  CHECK(s.stragglers.seed == config::Stragglers{}.seed);
  CHECK(s.collectives.all_gather.name == "auto");
  CHECK(s.collectives.protocol.name == "auto");
  const config::GpuSpec g;
  CHECK(s.cluster.topology.gpu.arch == g.arch);
  CHECK(s.cluster.topology.gpu.comm_interference == g.comm_interference);
  CHECK(s.cluster.topology.gpu.launch_queue == g.launch_queue);
  CHECK(s.cluster.topology.gpu.compute_model.name == "roofline");
  CHECK(s.cluster.topology.node.gpus == config::NodeSpec{}.gpus);
  CHECK(s.cluster.topology.fabric.oversubscription == config::FabricSpec{}.oversubscription);
  CHECK(s.cluster.topology.fabric.nodes_per_leaf == config::FabricSpec{}.nodes_per_leaf);
  CHECK(s.warnings.empty());
}
