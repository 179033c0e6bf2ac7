#pragma once

/// The atoms of Spool's actor protocol (CAF 0.17: at most 10 characters
/// each). Part of `interfaces.hpp`.

#include <caf/atom.hpp>

namespace spool::actors {

using write_atom = caf::atom_constant<caf::atom("write")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using push_atom = caf::atom_constant<caf::atom("push")>;
using pop_atom = caf::atom_constant<caf::atom("pop")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using extend_atom = caf::atom_constant<caf::atom("extend")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using seal_atom = caf::atom_constant<caf::atom("seal")>;
/// Parts of a batch another actor submits (core/writer/open_parts.hpp): a
/// holder tells the writer of its part (`hold`), a coordinator submits the
/// batch with its parts (`propose`) or gives them up (`abort`), and the
/// writer settles every part with the batch's outcome (`settled`).
using hold_atom = caf::atom_constant<caf::atom("hold")>;
using propose_atom = caf::atom_constant<caf::atom("propose")>;
using abort_atom = caf::atom_constant<caf::atom("abort")>;
using settled_atom = caf::atom_constant<caf::atom("settled")>;
/// The writer: a committed group is durable (internal), or a reader waits
/// until a slot's seq is.
using durable_atom = caf::atom_constant<caf::atom("durable")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using requeue_atom = caf::atom_constant<caf::atom("requeue")>;
using dlq_list_atom = caf::atom_constant<caf::atom("dlq_list")>;
using dlq_del_atom = caf::atom_constant<caf::atom("dlq_del")>;
using dead_atom = caf::atom_constant<caf::atom("dead")>;
using dlq_sweep_atom = caf::atom_constant<caf::atom("dlq_sweep")>;
using configure_atom = caf::atom_constant<caf::atom("configure")>;
using options_atom = caf::atom_constant<caf::atom("options")>;
using info_atom = caf::atom_constant<caf::atom("info")>;
using browse_atom = caf::atom_constant<caf::atom("browse")>;
using delete_atom = caf::atom_constant<caf::atom("delete")>;
/// Group deletion: the first phase (a cursor's vote) and the second (the
/// verdict: durable or failed).
using vote_atom = caf::atom_constant<caf::atom("vote")>;
using verdict_atom = caf::atom_constant<caf::atom("verdict")>;
/// A deleted queue's grace period is over.
using grace_atom = caf::atom_constant<caf::atom("grace")>;
using groups_atom = caf::atom_constant<caf::atom("groups")>;
using purge_atom = caf::atom_constant<caf::atom("purge")>;
using size_atom = caf::atom_constant<caf::atom("size")>;
using trim_atom = caf::atom_constant<caf::atom("trim")>;
using oldest_atom = caf::atom_constant<caf::atom("oldest")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using stage_atom = caf::atom_constant<caf::atom("stage")>;
using claim_atom = caf::atom_constant<caf::atom("claim")>;
using txn_atom = caf::atom_constant<caf::atom("txn")>;
using seed_atom = caf::atom_constant<caf::atom("seed")>;
using retention_atom = caf::atom_constant<caf::atom("retention")>;
using seek_atom = caf::atom_constant<caf::atom("seek")>;
using sub_update_atom = caf::atom_constant<caf::atom("sub_update")>;
using reap_atom = caf::atom_constant<caf::atom("reap")>;
using usage_atom = caf::atom_constant<caf::atom("usage")>;
using trace_atom = caf::atom_constant<caf::atom("trace")>;
using slot_atom = caf::atom_constant<caf::atom("slot")>;
using passivate_atom = caf::atom_constant<caf::atom("passivate")>;
using quit_atom = caf::atom_constant<caf::atom("quit")>;

} // namespace spool::actors
