#include "serve/schedule.h"

#include "core/clock.h"
#include "core/interrupt.h"

namespace infdoctor::serve {
namespace {

constexpr auto kHour = std::chrono::hours(1);

int requests_of(const report::Tally& t) {
  double n = 0;
  for (const auto& [_, k] : t.requests) n += k;
  return static_cast<int>(n);
}

// FNV-1a: a phase that stays the same for a name from run to run and from build to build.
std::uint64_t name_hash(const std::string& name) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Schedule::Clock::time_point slot_at_or_after(Schedule::Clock::time_point t, const std::string& name,
                                             std::chrono::seconds interval) {
  using D = Schedule::Clock::duration;
  const D period = std::chrono::duration_cast<D>(interval);
  if (period <= D::zero()) return t;
  const D phase(static_cast<D::rep>(name_hash(name) % static_cast<std::uint64_t>(period.count())));
  D past = (t.time_since_epoch() - phase) % period;  // how far t is past its slot
  if (past < D::zero()) past += period;
  return past == D::zero() ? t : t - past + period;
}

int TargetState::spent_last_hour(Clock::time_point now) {
  while (!spent.empty() && now - spent.front().first > kHour) spent.pop_front();
  int n = 0;
  for (const auto& [_, k] : spent) n += k;
  return n;
}

void Schedule::set_targets(std::vector<ServeTarget> targets) {
  std::lock_guard lock(mu_);
  std::map<std::string, std::shared_ptr<TargetState>> next;
  const auto now = Clock::now();
  for (auto& t : targets) {
    auto it = states_.find(t.spec.name);
    std::shared_ptr<TargetState> st;
    if (it != states_.end() && it->second->target.text == t.text) {
      st = it->second;
    } else {
      st = std::make_shared<TargetState>();
      if (it != states_.end()) st->spent = it->second->spent;
      st->next_due = now;
      st->version = ++versions_;
    }
    st->target = std::move(t);
    next[st->target.spec.name] = st;
  }
  states_ = std::move(next);
  wake_.notify_all();
}

std::shared_ptr<TargetState> Schedule::next_due() const {
  std::shared_ptr<TargetState> best;
  for (const auto& [_, st] : states_)
    if (!st->running && (!best || st->next_due < best->next_due)) best = st;
  return best;
}

void Schedule::loop(const std::function<void(TargetState&)>& run) {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto st = next_due();
    if (!st) {
      wake_.wait(lock);
      continue;
    }
    if (Clock::now() < st->next_due) {
      wake_.wait_until(lock, st->next_due);
      continue;  // a reload or stop may have changed what is due
    }
    // Here rather than only in stop(): the signal may have come while the last run was ending, and
    // whoever calls stop() looks for it only now and then.
    if (core::stop_requested() != 0) {
      stopping_ = true;
      break;
    }
    const auto due = st->next_due;
    st->running = true;
    lock.unlock();
    run(*st);
    lock.lock();
    st->running = false;
    const auto& t = st->target;
    st->next_due = slot_at_or_after(due + t.interval / 2, t.spec.name, t.interval);
    if (st->next_due < Clock::now()) st->next_due = slot_at_or_after(Clock::now() + t.interval / 2, t.spec.name, t.interval);
  }
}

void Schedule::stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  wake_.notify_all();
}

bool Schedule::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

std::shared_ptr<TargetState> Schedule::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = states_.find(name);
  return it == states_.end() ? nullptr : it->second;
}

std::vector<std::string> Schedule::names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [n, _] : states_) out.push_back(n);
  return out;
}

ServeTarget Schedule::target_of(const TargetState& st) const {
  std::lock_guard lock(mu_);
  return st.target;
}

int Schedule::budget_left(TargetState& st) const {
  std::lock_guard lock(mu_);
  return st.target.budget_per_hour - st.spent_last_hour(Clock::now());
}

void Schedule::keep(TargetState& st, const Outcome& o, bool latest) {
  std::lock_guard lock(mu_);
  if (!o.result) return;
  const report::Tally t = report::tally(*o.result);
  st.spent.emplace_back(Clock::now(), requests_of(t));
  if (!latest) return;
  st.totals.add(t);
  st.version = ++versions_;
  st.last = o.result;
  st.exit_code = o.exit_code;
  st.run_seconds = o.seconds;
  st.finished_at = core::unix_seconds_now();
}

void Schedule::count(TargetState& st, const std::string& outcome) {
  std::lock_guard lock(mu_);
  st.runs[outcome] += 1;
}

void Schedule::each(const std::function<void(TargetState&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [_, st] : states_) f(*st);
}

void Schedule::with(TargetState& st, const std::function<void(TargetState&)>& f) const {
  std::lock_guard lock(mu_);
  f(st);
}

}  // namespace infdoctor::serve
