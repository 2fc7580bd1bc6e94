// Role: OrderedJobs (formats/common/ordered_jobs.h): jobs come back in the
// order they were submitted, only once their work is done, whichever worker
// finishes first; take_oldest(false) does not wait; the destructor stops
// workers with jobs still queued. The frames writer's encoder threads rely on
// it (tests/formats/bap/bap_encoders_test.cpp); it also runs under
// ThreadSanitizer there (scripts/tsan_recorder.sh).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "formats/common/ordered_jobs.h"

using tracecorn::formats::OrderedJobs;

namespace {

struct Job {
  int number = 0;
  int doubled = 0;
  std::size_t worker = 0;
};

}  // namespace

TEST_CASE("OrderedJobs: jobs come back in submission order, each done, whichever worker finishes first") {
  std::atomic<int> started{0};
  OrderedJobs<Job> jobs(4, [&](Job& job, std::size_t worker) {
    ++started;
    // The first jobs take longest: later ones finish before them.
    std::this_thread::sleep_for(std::chrono::microseconds(job.number < 8 ? 2000 - job.number * 200 : 10));
    job.doubled = job.number * 2;
    job.worker = worker;
  });
  CHECK(jobs.threads() == 4);
  for (int i = 0; i < 64; ++i) jobs.submit(std::make_unique<Job>(Job{i, 0, 0}));
  std::vector<std::size_t> workers_seen(4, 0);
  for (int i = 0; i < 64; ++i) {
    auto job = jobs.take_oldest(true);
    REQUIRE(job);
    CHECK(job->number == i);
    CHECK(job->doubled == 2 * i);
    REQUIRE(job->worker < 4);
    ++workers_seen[job->worker];
  }
  CHECK(jobs.take_oldest(true) == nullptr);  // none left: no wait
  CHECK(jobs.outstanding() == 0);
  CHECK(started == 64);
  std::size_t busy = 0;
  for (const std::size_t count : workers_seen) busy += count > 0;
  CHECK(busy >= 2);  // the work was spread (the first job alone holds one worker for 2 ms)
}

TEST_CASE("OrderedJobs: take_oldest(false) returns nothing while the oldest job's work runs") {
  std::atomic<bool> release{false};
  OrderedJobs<Job> jobs(2, [&](Job& job, std::size_t) {
    while (job.number == 0 && !release) std::this_thread::sleep_for(std::chrono::microseconds(100));
    job.doubled = job.number * 2;
  });
  jobs.submit(std::make_unique<Job>(Job{0, 0, 0}));
  jobs.submit(std::make_unique<Job>(Job{1, 0, 0}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // job 1 is done by now, job 0 is held
  CHECK(jobs.take_oldest(false) == nullptr);
  CHECK(jobs.outstanding() == 2);
  release = true;
  auto first = jobs.take_oldest(true);
  REQUIRE(first);
  CHECK(first->number == 0);
  CHECK(first->doubled == 0);
  auto second = jobs.take_oldest(true);
  REQUIRE(second);
  CHECK(second->doubled == 2);
}

TEST_CASE("OrderedJobs: destroyed with jobs queued, it stops after the work that started") {
  std::atomic<int> done{0};
  {
    OrderedJobs<Job> jobs(1, [&](Job&, std::size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++done;
    });
    for (int i = 0; i < 50; ++i) jobs.submit(std::make_unique<Job>(Job{i, 0, 0}));
  }
  CHECK(done < 50);  // the destructor did not run every queued job
}
