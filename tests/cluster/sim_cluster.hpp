#pragma once

/// A deterministic simulation of one slot replicated on 3 or 5 nodes: the
/// real `replica_core` and `election` objects, each over a `sim_disk`, on
/// a network that drops, duplicates, reorders, corrupts and partitions,
/// with crashes between any two steps (so between a write and its sync,
/// and between a sync and the answer it releases). Everything comes from
/// one seed; a failure names the seed and the step, and the seed replays.
///
/// Invariants, checked as the run goes and at its end:
///   - no committed entry lost: every leader's log holds every entry any
///     replica ever knew committed, when it takes office;
///   - one payload per (slot, seq): a replica's committed entry equals
///     every other replica's committed entry at that seq;
///   - a replica's commit point never goes back while it runs, and no
///     replica truncates below it;
///   - at most one leader per epoch;
///   - after healing, the replicas converge: equal histories, all committed,
///     every acknowledged write present.

#include <cstdint>
#include <string>

namespace spool::cluster::sim {

struct sim_options {
  std::uint64_t seed = 1;
  /// 0: 3 or 5, by the seed.
  std::size_t nodes = 0;
  /// Steps with faults; then faults stop and the cluster must heal.
  std::size_t steps = 300;
  std::size_t heal_steps = 20000;
  /// How many of the last events the trace keeps.
  std::size_t trace_lines = 120;
};

struct sim_result {
  bool ok = true;
  /// The broken invariant, the seed and the step; empty when ok.
  std::string failure;
  /// The last events before the failure (or the end), one per line.
  std::string trace;
  std::size_t nodes = 0;
  std::size_t committed = 0;
  std::size_t acknowledged = 0;
  std::size_t elections = 0;
  std::size_t crashes = 0;
  std::size_t truncations = 0;
  std::size_t snapshots = 0;
  /// Snapshots installed from more than one piece.
  std::size_t pieced_snapshots = 0;
};

sim_result run(const sim_options& o);

} // namespace spool::cluster::sim
