#include "router/replica_set.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "loadgen/http_client.h"

namespace strata::router {
namespace {

std::string_view trim(std::string_view s) {
  const auto not_space = [](char c) { return c != ' ' && c != '\t' && c != '\r'; };
  while (!s.empty() && !not_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && !not_space(s.back())) s.remove_suffix(1);
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::vector<std::string> parse_replica_list(std::string_view text, const std::string& origin) {
  std::vector<std::string> out;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    std::string url(line);
    while (url.size() > 1 && url.back() == '/') url.pop_back();
    try {
      loadgen::parse_base_url(url);
    } catch (const std::exception& e) {
      throw Error(origin + ":" + std::to_string(line_no) + ": not a replica URL '" + url + "' (" +
                  e.what() + ")");
    }
    if (!contains(out, url)) out.push_back(std::move(url));
  }
  return out;
}

std::vector<std::string> read_replica_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("--replica-file: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_replica_list(text.str(), path);
}

std::vector<std::string> merge_replicas(const std::vector<std::string>& flags,
                                        const std::vector<std::string>& file) {
  std::vector<std::string> out;
  for (const auto* list : {&flags, &file})
    for (const std::string& r : *list)
      if (!contains(out, r)) out.push_back(r);
  return out;
}

ReplicaChange diff_replicas(const std::vector<std::string>& current,
                            const std::vector<std::string>& wanted) {
  ReplicaChange c;
  for (const std::string& w : wanted)
    if (!contains(current, w)) c.added.push_back(w);
  for (const std::string& r : current)
    if (!contains(wanted, r)) c.removed.push_back(r);
  return c;
}

}  // namespace strata::router
