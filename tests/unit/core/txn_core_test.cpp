// Transactions, the pure rules (semantics.md §10): acks staged on a copy of
// the cursor core, the checks before anything runs, the staging order, the
// stored answer and the retention of transaction ids.

#include <catch2/catch.hpp>

#include "config/options.hpp"
#include "core/broker/txn_answer.hpp"
#include "core/broker/txn_core.hpp"
#include "core/cursor/cursor_txn.hpp"

using namespace spool;
using namespace spool::core;
using namespace std::chrono_literals;
using spool::storage::offset;

namespace {

const mono_time t0 = mono_time{} + 1000h;

cursor_policy policy() {
  cursor_policy p;
  p.lease_time = 30s;
  p.retry_limit = 0; // the first failure dead-letters
  return p;
}

/// A cursor holding a lease on offsets 0..2 of a partition 0..9.
struct leased {
  cursor_core cur{spool::storage::cursor_record{}, policy()};
  lease_info lease;
  offset last{9};

  leased() {
    auto plan = cur.plan(t0, offset{0}, last, 3);
    auto& p = std::get<delivery_plan>(plan);
    lease = *cur.grant(p, p.deliver.size(), "L1", t0).lease;
  }

  ack_request ack(std::int64_t o, ack_status s = ack_status::completed) const {
    ack_request r;
    r.lease_id = lease.id;
    r.off = offset{o};
    r.status = s;
    r.error = "boom";
    return r;
  }
};

txn_ack_op ack_op(std::string q, std::string p, std::string g,
                  std::optional<std::string> lease = "L") {
  txn_ack_op op{std::move(q), std::move(p), std::move(g), {}};
  op.ack.lease_id = std::move(lease);
  op.ack.off = offset{0};
  return op;
}

} // namespace

TEST_CASE("staged acks leave the cursor as it was until committed",
          "[txn][cursor]") {
  leased fx;
  auto before = fx.cur.record();
  auto staged = stage_acks(fx.cur, {fx.ack(0), fx.ack(1)}, fx.last, t0);
  REQUIRE(std::holds_alternative<staged_acks>(staged));
  auto& s = std::get<staged_acks>(staged);
  CHECK(s.changed);
  CHECK(s.after.committed() == offset{1});
  // The live cursor is untouched: same record, same lease.
  CHECK(fx.cur.record() == before);
  CHECK(fx.cur.committed() == offset{-1});
  REQUIRE(fx.cur.lease());
  CHECK(fx.cur.lease()->id == "L1");
}

TEST_CASE("one invalid ack refuses the whole stage and names it",
          "[txn][cursor]") {
  leased fx;
  auto bad = fx.ack(5); // not in the lease
  auto staged = stage_acks(fx.cur, {fx.ack(0), bad}, fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(staged));
  auto& r = std::get<stage_refusal>(staged);
  CHECK(r.index == 1);
  CHECK(r.reason == "Message not in lease");
  auto wrong_lease = fx.ack(0);
  wrong_lease.lease_id = "other";
  auto s2 = stage_acks(fx.cur, {wrong_lease}, fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(s2));
  CHECK(std::get<stage_refusal>(s2).reason == "Invalid or expired lease");
  CHECK(fx.cur.committed() == offset{-1});
}

TEST_CASE("retry and a leaseless ack are refused in a transaction",
          "[txn][cursor]") {
  leased fx;
  auto retry = stage_acks(fx.cur, {fx.ack(0, ack_status::retry)}, fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(retry));
  CHECK(std::get<stage_refusal>(retry).reason
        == "retry is not allowed in a transaction");
  auto leaseless = fx.ack(0);
  leaseless.lease_id.reset();
  auto s = stage_acks(fx.cur, {leaseless}, fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(s));
  CHECK(std::get<stage_refusal>(s).reason
        == "an ack in a transaction must name its lease");
}

TEST_CASE("a transaction's ack without a lease settles under the live lease "
          "when requiredLeases names it",
          "[txn][cursor]") {
  leased fx;
  auto a = fx.ack(0);
  a.lease_id.reset();
  auto named = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return std::make_shared<const std::vector<std::string>>(std::move(v));
  };
  a.lease_in = named({"other", fx.lease.id});
  auto s = stage_acks(fx.cur, {a}, fx.last, t0);
  REQUIRE(std::holds_alternative<staged_acks>(s));
  auto& staged = std::get<staged_acks>(s);
  CHECK(staged.outcomes.at(0).error == ack_error::none);
  CHECK(staged.after.committed() == offset{0});

  a.lease_in = named({"other"}); // names a lease that is not the live one
  auto wrong = stage_acks(fx.cur, {a}, fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(wrong));
  CHECK(std::get<stage_refusal>(wrong).reason == "Invalid or expired lease");

  a.lease_in = named({fx.lease.id}); // the lease expired meanwhile
  auto late = stage_acks(fx.cur, {a}, fx.last, t0 + 30s);
  REQUIRE(std::holds_alternative<stage_refusal>(late));
  CHECK(std::get<stage_refusal>(late).reason == "Invalid or expired lease");

  // A failed ack ends the lease: a later one of the same transaction that
  // names it at the body level fails, as one naming it itself does.
  auto failed = fx.ack(0, ack_status::failed);
  failed.lease_id.reset();
  failed.lease_in = named({fx.lease.id});
  a.lease_in = named({fx.lease.id});
  a.off = offset{1};
  auto ended = stage_acks(fx.cur, {failed, a}, fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(ended));
  CHECK(std::get<stage_refusal>(ended).index == 1u);
}

TEST_CASE("a staged ack on a lease that expired is refused", "[txn][cursor]") {
  leased fx;
  auto s = stage_acks(fx.cur, {fx.ack(0)}, fx.last, t0 + 30s);
  REQUIRE(std::holds_alternative<stage_refusal>(s));
  CHECK(std::get<stage_refusal>(s).reason == "Invalid or expired lease");
}

TEST_CASE("failed in a transaction follows §4 and ends the lease for later "
          "acks",
          "[txn][cursor]") {
  leased fx;
  // retryLimit 0: the failure dead-letters frame 0; the lease ends.
  auto s = stage_acks(fx.cur, {fx.ack(0, ack_status::failed)}, fx.last, t0);
  REQUIRE(std::holds_alternative<staged_acks>(s));
  auto& ok = std::get<staged_acks>(s);
  REQUIRE(ok.dead.size() == 1);
  CHECK(ok.dead[0].off == offset{0});
  CHECK(ok.outcomes[0].lease_released);
  CHECK(!ok.after.lease());
  // A later ack of the same lease in the same transaction fails.
  auto both = stage_acks(fx.cur, {fx.ack(0, ack_status::failed), fx.ack(1)},
                         fx.last, t0);
  REQUIRE(std::holds_alternative<stage_refusal>(both));
  CHECK(std::get<stage_refusal>(both).index == 1);
}

TEST_CASE("dlq in a transaction dead-letters the frame", "[txn][cursor]") {
  leased fx;
  auto s = stage_acks(fx.cur, {fx.ack(1, ack_status::dlq)}, fx.last, t0);
  REQUIRE(std::holds_alternative<staged_acks>(s));
  auto& ok = std::get<staged_acks>(s);
  REQUIRE(ok.dead.size() == 1);
  CHECK(ok.dead[0].error == "boom");
  CHECK(ok.outcomes[0].dead);
}

TEST_CASE("an idempotent ack in a transaction stages no change",
          "[txn][cursor]") {
  leased fx;
  auto a = fx.ack(0);
  REQUIRE(fx.cur.ack(a, fx.last, t0).error == ack_error::none);
  auto s = stage_acks(fx.cur, {a}, fx.last, t0);
  REQUIRE(std::holds_alternative<staged_acks>(s));
  CHECK(!std::get<staged_acks>(s).changed);
}

TEST_CASE("a transaction is checked before anything runs", "[txn]") {
  spool::storage::frame_limits limits;
  txn_request empty;
  auto r = check_txn(empty, limits, {});
  REQUIRE(r);
  CHECK(r->error == "operations must not be empty");
  CHECK(!r->success);

  txn_request retry;
  retry.id = "t1";
  retry.ops.push_back(txn_push_op{{{"q", "Default", {}}}});
  auto a = ack_op("q", "p", "g");
  a.ack.status = ack_status::retry;
  retry.ops.push_back(a);
  r = check_txn(retry, limits, {});
  REQUIRE(r);
  CHECK(r->transaction_id == "t1");
  CHECK(r->failed_op == 1u);
  CHECK(r->error == "operations[1]: retry is not allowed in a transaction");

  txn_request leaseless;
  leaseless.ops.push_back(ack_op("q", "p", "g", std::nullopt));
  r = check_txn(leaseless, limits, {});
  REQUIRE(r);
  CHECK(r->error
        == "operations[0]: an ack in a transaction must name its lease");

  leaseless.required_leases = {"L"}; // Queen's JS client names it here
  CHECK(!check_txn(leaseless, limits, {}));

  txn_request bad_item;
  bad_item.ops.push_back(txn_push_op{{{"q", "Default", {}}, {"a/b", "p", {}}}});
  r = check_txn(bad_item, limits, {});
  REQUIRE(r);
  CHECK(r->error
        == "operations[0]: items[1].queue must not contain '/' or control "
           "characters");

  txn_request big;
  big.ops.push_back(txn_push_op{{{"q", "Default", {}}}});
  std::get<txn_push_op>(big.ops[0])
      .items[0]
      .frame.payload.assign(limits.max_payload_bytes + 1, 'x');
  r = check_txn(big, limits, {});
  REQUIRE(r);
  CHECK(r->error.find("operations[0]: items[0]: ") == 0);

  txn_request fine;
  fine.ops.push_back(txn_push_op{{{"q", "Default", {}}}});
  fine.ops.push_back(ack_op("q", "p", "g"));
  CHECK(!check_txn(fine, limits, {}));
}

TEST_CASE("a transaction's pushes together are held to push.maxItems and "
          "push.maxBytes, counted over every push op",
          "[txn][limits]") {
  spool::storage::frame_limits limits;
  spool::config::push_limits push;
  push.max_items = 2;
  push.max_bytes = 10;
  txn_request req;
  req.id = "t";
  req.ops.push_back(txn_push_op{{{"q", "Default", {}}}});
  req.ops.push_back(ack_op("q", "p", "g"));
  req.ops.push_back(txn_push_op{{{"r", "Default", {}}}});
  std::get<txn_push_op>(req.ops[0]).items[0].frame.payload.assign(5, 'x');
  std::get<txn_push_op>(req.ops[2]).items[0].frame.payload.assign(5, 'x');
  CHECK(!check_txn(req, limits, push)); // two items, ten bytes: at the caps
  auto bytes = req;
  std::get<txn_push_op>(bytes.ops[2]).items[0].frame.payload.push_back('x');
  auto r = check_txn(bytes, limits, push);
  REQUIRE(r);
  CHECK(r->transaction_id == "t");
  CHECK(!r->success);
  CHECK(!r->failed_op); // the whole request, no one operation
  CHECK(r->error == "a push holds at most 10 payload bytes, got 11");
  auto items = req;
  std::get<txn_push_op>(items.ops[2]).items.push_back({"r", "Default", {}});
  r = check_txn(items, limits, push);
  REQUIRE(r);
  CHECK(!r->failed_op);
  CHECK(r->error == "a push holds at most 2 items, got 3");
}

TEST_CASE("a transaction stages cursors in one global order and keeps each "
          "cursor's acks in request order",
          "[txn]") {
  txn_request req;
  req.ops.push_back(ack_op("b", "p", "g"));
  req.ops.push_back(txn_push_op{{{"y", "Default", {}}, {"x", "Default", {}}}});
  req.ops.push_back(ack_op("a", "p", "g"));
  auto second = ack_op("b", "p", "g");
  second.ack.off = offset{1};
  req.ops.push_back(second);
  req.ops.push_back(txn_push_op{{{"y", "z", {}}}});
  auto plan = plan_txn(req);
  REQUIRE(plan.acks.size() == 2);
  CHECK(plan.acks[0].queue == "a");
  CHECK(plan.acks[0].ops == std::vector<std::size_t>{2});
  CHECK(plan.acks[1].queue == "b");
  CHECK(plan.acks[1].ops == std::vector<std::size_t>{0, 3});
  CHECK(plan.acks[1].reqs[1].off == offset{1});
  REQUIRE(plan.pushes.size() == 2);
  CHECK(plan.pushes[0].queue == "y");
  CHECK(plan.pushes[0].from
        == std::vector<std::pair<std::size_t, std::size_t>>{{1, 0}, {4, 0}});
  CHECK(plan.pushes[1].queue == "x");
}

TEST_CASE("a transaction's requiredLeases reach only its acks that name no "
          "lease",
          "[txn]") {
  txn_request req;
  req.required_leases = {"L2", "L1", "L2"}; // sorted, repeats once
  req.ops.push_back(ack_op("a", "p", "g", std::nullopt));
  req.ops.push_back(ack_op("a", "p", "g", "own"));
  auto plan = plan_txn(req);
  REQUIRE(plan.acks.size() == 1);
  REQUIRE(plan.acks[0].reqs.size() == 2);
  REQUIRE(plan.acks[0].reqs[0].lease_in);
  CHECK(*plan.acks[0].reqs[0].lease_in == std::vector<std::string>{"L1", "L2"});
  CHECK(!plan.acks[0].reqs[1].lease_in);
  CHECK(plan.acks[0].reqs[1].lease_id == "own");
}

TEST_CASE("a committed transaction's answer puts each ack's effects and each "
          "pushed item where its operation named it",
          "[txn]") {
  txn_request req;
  req.ops.push_back(txn_push_op{{{"y", "Default", {}}, {"x", "Default", {}}}});
  req.ops.push_back(ack_op("a", "p", "g"));
  req.ops.push_back(ack_op("a", "p", "g"));
  req.ops.push_back(txn_push_op{{{"y", "z", {}}}});
  auto plan = plan_txn(req);
  REQUIRE(plan.pushes.size() == 2); // y: (0, 0), (3, 0); x: (0, 1)
  auto r = txn_answer(
      "t", req, plan,
      [](std::size_t k, std::size_t j) -> std::optional<txn_op_result> {
        if (k != 0 || j != 1)
          return std::nullopt; // only the second ack answered
        return txn_op_result{{}, true, true};
      },
      [&](std::size_t k, std::size_t j) -> std::optional<txn_item_result> {
        return txn_item_result{plan.pushes[k].queue, "P", "u",
                               txn_push_status::queued,
                               offset{static_cast<std::int64_t>(10 * k + j)}};
      });
  CHECK(r.success);
  CHECK(r.transaction_id == "t");
  REQUIRE(r.results.size() == 4);
  REQUIRE(r.results[0].items.size() == 2);
  CHECK(r.results[0].items[0].queue == "y");
  CHECK(r.results[0].items[0].off == offset{0});
  CHECK(r.results[0].items[1].queue == "x");
  CHECK(r.results[0].items[1].off == offset{10});
  REQUIRE(r.results[3].items.size() == 1);
  CHECK(r.results[3].items[0].off == offset{1});
  CHECK(!r.results[1].lease_released);
  CHECK(r.results[2].lease_released);
  CHECK(r.results[2].dead_lettered);
}

TEST_CASE("a transaction's answer survives its stored form", "[txn]") {
  auto r = txn_success("t-1", 2);
  r.results[0].items.push_back(
      {"q", "Default", "uuid", txn_push_status::duplicate, offset{7}});
  r.results[1].lease_released = true;
  auto bytes = encode_txn_result(r);
  auto back = decode_txn_result(bytes);
  REQUIRE(back);
  CHECK(*back == r);
  CHECK(!decode_txn_result(bytes.substr(0, bytes.size() - 1)));
  auto rb = txn_rollback("t-2", 3, "Message not found");
  CHECK(rb.error == "operations[3]: Message not found");
  CHECK(*decode_txn_result(encode_txn_result(rb)) == rb);
}

TEST_CASE("a stored transaction id expires after its retention", "[txn]") {
  txn_retention keep{std::chrono::seconds{60}, 16};
  spool::storage::micros t = 1'000'000'000;
  CHECK(!keep.expired(t, t));
  CHECK(!keep.expired(t, t + 60'000'000));
  CHECK(keep.expired(t, t + 60'000'001));
  CHECK(keep.cutoff(t + 60'000'001) == t + 1);
}

TEST_CASE("a transaction's stored answer lives in the queue its first "
          "operation names",
          "[txn]") {
  txn_request req;
  req.id = "t-1";
  CHECK(!txn_home_queue(req));
  req.ops.push_back(txn_push_op{}); // no items: names no queue
  CHECK(!txn_home_queue(req));
  txn_ack_op ack;
  ack.queue = "acked";
  req.ops.push_back(ack);
  txn_push_op push;
  push.items.push_back({"pushed", "Default", {}});
  req.ops.push_back(push);
  CHECK(txn_home_queue(req) == "acked");
  req.ops.erase(req.ops.begin() + 1); // now the push comes first
  CHECK(txn_home_queue(req) == "pushed");
}
