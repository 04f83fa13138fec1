// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// DeliveryPool: a few threads shared by every subscription of a Db. A
// subscription is a DeliveryPool::Job; Schedule puts it on the run queue
// (once, however often it is called), a pool thread calls its RunSlice, and
// if that returns true (more to do) the job goes to the back of the queue,
// so that busy subscriptions take turns. A job never runs on two threads at
// once. No thread per subscription, and no polling: jobs are scheduled by
// the write path and by timers.

#ifndef HQ_LIB_ENGINE_DELIVERY_POOL_H_
#define HQ_LIB_ENGINE_DELIVERY_POOL_H_

#include <deque>
#include <thread>
#include <vector>

#include "lib/util/sync.h"

namespace hq {

class DeliveryPool {
 public:
  class Job {
   public:
    // Does a bounded amount of work; true if there is more to do now.
    virtual bool RunSlice() = 0;

   protected:
    ~Job() = default;

   private:
    friend class DeliveryPool;
    // Guarded by the pool's mutex.
    bool queued_ = false;
    bool running_ = false;
    bool again_ = false;  // Scheduled while running.
    bool stopped_ = false;
  };

  explicit DeliveryPool(int threads);
  // Stops the threads; jobs still queued do not run. Every job must have
  // been stopped (Stop) before.
  ~DeliveryPool();
  DeliveryPool(const DeliveryPool&) = delete;
  DeliveryPool& operator=(const DeliveryPool&) = delete;

  // Runs `job` soon (at once if a thread is free). No-op once stopped.
  void Schedule(Job* job);
  // After Stop returns the job is not running and never runs again.
  // REQUIRES: not called from that job's RunSlice (see InJob).
  void Stop(Job* job);
  // Whether the calling thread is inside `job`'s RunSlice.
  static bool InJob(const Job* job);

 private:
  void Loop();

  Mutex mu_;
  CondVar work_cv_;  // Signalled when a job is queued or at shutdown.
  CondVar idle_cv_;  // Signalled when a job stops running.
  std::deque<Job*> queue_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_DELIVERY_POOL_H_
