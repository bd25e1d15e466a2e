// Where sandrun's data (profiles/, images/) is found: one lookup for every kind, used by the
// profile loaders (harden::DefaultProfilesDir) and the image recipes (docker::DefaultImagesDir).
//
// Order: the kind's variable ($SANDRUN_PROFILES_DIR, $SANDRUN_IMAGES_DIR) when set and not empty;
// else, when this executable sits in an installed tree (`<dir of the real path of
// /proc/self/exe>/../share/sandrun` is a directory), that tree's `share/sandrun/<kind>`, whether
// or not it exists: an installed sandrun never falls back to the sources it was built from, so a
// damaged install fails naming its own directory; else the source tree (SANDRUN_SOURCE_DIR, a
// build tree's binary). Resolved at run time from the executable, never from the install prefix,
// so an installed tree copied elsewhere keeps working.
//
// Pattern of use:
//   DataDir profiles = FindDataDir(DataKind::kProfiles);
//   LoadHostProfile(profiles.path, "default");
//   doctor: profiles.path + " (" + DescribeSource(profiles) + ")"
#pragma once

#include <string>

#include "sandbox/base/result.h"

namespace sandrun {

enum class DataKind { kProfiles, kImages };

struct DataDir {
  enum class Source { kEnvironment, kInstalled, kSourceTree };
  std::string path;
  Source source = Source::kSourceTree;
  std::string origin;  // the variable, the executable or the source tree the path comes from
};

// "profiles" | "images": the directory's name under share/sandrun and in the source tree.
const char* DataKindName(DataKind kind);
// "SANDRUN_PROFILES_DIR" | "SANDRUN_IMAGES_DIR".
const char* DataKindVariable(DataKind kind);

// The lookup above for this process (its environment and /proc/self/exe).
DataDir FindDataDir(DataKind kind);

// The same lookup from explicit inputs (tests): `env_value` is the variable's value (nullptr when
// unset), `executable` the real path of the running binary ("" when unknown), `source_dir` the
// source tree.
DataDir FindDataDirFrom(DataKind kind, const char* env_value, const std::string& executable,
                        const std::string& source_dir);

// Why this directory, for doctor: "from $SANDRUN_PROFILES_DIR", "installed next to
// /opt/sandrun/bin/sandrun", "the source tree /src/sandrun".
std::string DescribeSource(const DataDir& dir);

// Ok when `dir.path` is a directory; else kNotFound "<path> (<source>) is missing" (the caller
// says what is lost and how to fix it: DataDirFix).
Status CheckDataDir(const DataDir& dir);

// How to get a missing directory back: reinstall, or point the kind's variable at a copy.
std::string DataDirFix(DataKind kind);

// The real path of this process's executable (readlink /proc/self/exe); "" when unknown.
std::string ExecutablePath();

}  // namespace sandrun
