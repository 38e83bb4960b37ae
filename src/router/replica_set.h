// The router's replica list from `--replica` flags and an optional `--replica-file`
// (one base URL per line; '#' starts a comment; blank lines and surrounding spaces are
// ignored), and the change between two lists when the file is re-read on SIGHUP:
// replicas that join (they enter the ring) and replicas that leave (they drain: no new
// requests, the ones in flight finish). Plain functions, no I/O but reading the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::router {

// The URLs of a replica file's text, in order, duplicates dropped. Throws strata::Error
// naming `origin` and the line on a URL that loadgen::parse_base_url rejects.
std::vector<std::string> parse_replica_list(std::string_view text, const std::string& origin);

// Reads and parses `path`; throws strata::Error when it cannot be read.
std::vector<std::string> read_replica_file(const std::string& path);

// `flags` then the file's entries (when `path` is set), duplicates dropped.
std::vector<std::string> merge_replicas(const std::vector<std::string>& flags,
                                        const std::vector<std::string>& file);

struct ReplicaChange {
  std::vector<std::string> added;    // in `wanted`, not in `current` (wanted's order)
  std::vector<std::string> removed;  // in `current`, not in `wanted` (current's order)
  bool empty() const { return added.empty() && removed.empty(); }
};

ReplicaChange diff_replicas(const std::vector<std::string>& current,
                            const std::vector<std::string>& wanted);

}  // namespace strata::router
