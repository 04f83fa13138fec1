// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/delivery_pool.h"

#include <algorithm>

namespace hq {
namespace {
thread_local const DeliveryPool::Job* current_job = nullptr;
}  // namespace

DeliveryPool::DeliveryPool(int threads) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

DeliveryPool::~DeliveryPool() {
  {
    MutexLock l(&mu_);
    shutdown_ = true;
    work_cv_.SignalAll();
  }
  for (std::thread& t : threads_) t.join();
}

bool DeliveryPool::InJob(const Job* job) { return current_job == job; }

void DeliveryPool::Schedule(Job* job) {
  MutexLock l(&mu_);
  if (job->stopped_ || job->queued_) return;
  if (job->running_) {
    job->again_ = true;
    return;
  }
  job->queued_ = true;
  queue_.push_back(job);
  work_cv_.Signal();
}

void DeliveryPool::Stop(Job* job) {
  MutexLock l(&mu_);
  job->stopped_ = true;
  if (job->queued_) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), job));
    job->queued_ = false;
  }
  while (job->running_) idle_cv_.Wait(&mu_);
}

void DeliveryPool::Loop() {
  mu_.Lock();
  for (;;) {
    while (queue_.empty() && !shutdown_) work_cv_.Wait(&mu_);
    if (shutdown_) break;
    Job* job = queue_.front();
    queue_.pop_front();
    job->queued_ = false;
    job->running_ = true;
    job->again_ = false;
    mu_.Unlock();
    current_job = job;
    const bool more = job->RunSlice();
    current_job = nullptr;
    mu_.Lock();
    job->running_ = false;
    if ((more || job->again_) && !job->stopped_) {
      job->again_ = false;
      job->queued_ = true;
      queue_.push_back(job);
      work_cv_.Signal();
    }
    idle_cv_.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace hq
