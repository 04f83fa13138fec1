// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
#define CATCH_CONFIG_MAIN
#include "catch2/catch.hpp"
