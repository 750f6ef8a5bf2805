// NCCL's ring (collective.hpp) with measured costs from a calibration file. The traffic keeps the
// ring's paths (so concurrent collectives still share links in SimGrid); only its price changes:
//   t = base_latency + intra-node steps x nvlink hop_latency + node-crossing steps x nic hop_latency
//     + S f(n) / bus_bandwidth
// with the entry of the collective's kind and link class (nvlink inside a node, nic across
// nodes), at the collective's size for a size-aware entry. Without an nvlink entry the
// intra-node steps take the topology's NVLink latency, or nothing under a size-aware nic entry
// (fitted to a measured curve, its base latency includes them). The engine moves a path's bytes
// at link bandwidth x efficiency, so each path's bytes are rescaled by (that rate / the
// calibrated rate): the transfer then takes the calibrated time.
// A path over NICs carries 1/G of the data of a ring whose G ranks per node each use their own
// NIC, so it runs at bus_bandwidth / G. A kind or link class the calibration lacks is priced as
// the inner algorithm prices it; so is a size below the sizes a size-aware calibration measured
// (config::CollectiveCalibration::at).
#pragma once

#include "config/calibration.hpp"
#include "engine/collective.hpp"

namespace shardsim::engine {

class CalibratedRing final : public CollectiveAlgorithm {
 public:
  // `inner` must outlive this object and be a ring (its paths are taken as ring paths).
  CalibratedRing(const CollectiveAlgorithm& inner, const config::CalibrationConfig& calibration);

  [[nodiscard]] std::string_view name() const override { return "calibrated_ring"; }
  [[nodiscard]] CollectivePlan plan(graph::OpKind kind, std::span<const int> ranks, double bytes,
                                    const ClusterView& cluster) const override;

 private:
  const CollectiveAlgorithm& inner_;
  config::CalibrationConfig calibration_;
};

}  // namespace shardsim::engine
