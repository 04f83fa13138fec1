// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A reader of LevelDB's MANIFEST: the log of VersionEdits that says which
// table files make up the database (LevelDB's db/version_edit.cc and
// doc/impl.md). Pure functions on bytes: no Env, no Db. Db::Backup reads
// it to know which tables and logs a consistent copy needs; Db::Repair to
// name the tables a damaged directory should hold.
//
// An edit is a sequence of (varint32 tag, fields):
//   1 comparator        length-prefixed name
//   2 log number        varint64
//   3 next file number  varint64
//   4 last sequence     varint64
//   5 compact pointer   varint32 level, length-prefixed internal key
//   6 deleted file      varint32 level, varint64 number
//   7 new file          varint32 level, varint64 number, varint64 bytes,
//                       length-prefixed smallest and largest internal keys
//   9 prev log number   varint64
// DO NOT CHANGE: LevelDB's format. The edits are framed as log records
// (lib/format/log_check.h).

#ifndef HQ_LIB_FORMAT_MANIFEST_H_
#define HQ_LIB_FORMAT_MANIFEST_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace hq::manifest {

// The database a MANIFEST describes after its last intact edit.
struct State {
  struct Table {
    int level = 0;
    uint64_t bytes = 0;
    // Internal keys (user key, then 8 bytes of sequence number and type).
    std::string smallest, largest;
  };
  // The live tables, by file number.
  std::map<uint64_t, Table> tables;
  // LevelDB replays every log numbered at least log_number, and the one
  // numbered prev_log_number (0: none).
  uint64_t log_number = 0;
  uint64_t prev_log_number = 0;
  // Every file LevelDB had numbered when the last edit was written is
  // below this.
  uint64_t next_file_number = 0;
  uint64_t last_sequence = 0;
  // Where the last complete edit ends: the MANIFEST cut here describes the
  // same state (bytes after it are an edit being appended, cut short).
  uint64_t intact_end = 0;
  // Edits read.
  int64_t edits = 0;
};

// Reads the contents of a MANIFEST file. False, with what is wrong in
// *error, if a record is damaged (checksum, framing), an edit does not
// decode or has a tag this reader does not know, or there is no edit. A
// last record cut short by the end of the data is not damage: the state
// is that of the edits before it.
bool Read(std::string_view data, State* out, std::string* error);

// The user key of an internal key (its first size - 8 bytes); the whole
// key if it is shorter than 8 bytes.
std::string_view UserKey(std::string_view internal_key);

// LevelDB's file names: "000123.ldb" (or ".sst"), "000123.log",
// "MANIFEST-000123". False if `name` is not one of them.
bool ParseTableName(std::string_view name, uint64_t* number);
bool ParseLogName(std::string_view name, uint64_t* number);
bool ParseManifestName(std::string_view name, uint64_t* number);

// The name of the MANIFEST that the contents of a CURRENT file name
// ("MANIFEST-000123\n"). False if `current` is anything else (no newline
// at its end: CURRENT is cut short or being rewritten).
bool ParseCurrent(std::string_view current, std::string_view* manifest_name);

}  // namespace hq::manifest

#endif  // HQ_LIB_FORMAT_MANIFEST_H_
