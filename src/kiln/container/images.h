#pragma once
// The container images a workflow names, found without running it (`kiln images`,
// docs/containers.md "Images ahead of the first job"): job containers, services and
// `uses: docker://IMAGE` steps. An image written with expressions is resolved when they read
// only the job's matrix (each combination of a matrix written in the file gives one image);
// any other expression (inputs, env, needs, a matrix that is itself an expression, ...) is
// known only when the job runs, and is reported as unresolved, with where it is written.

#include <string>
#include <string_view>
#include <vector>

#include "kiln/container/engine.h"
#include "kiln/core/result.h"
#include "kiln/workflow/model.h"

namespace kiln::container {

struct ImageUse {
  std::string image;     // resolved: no expression left
  SourceLocation where;  // of the text naming it
  std::string job;       // the job's id
  std::string role;      // "container", "service db", "step 2 (docker://)"
};

struct UnresolvedImage {
  SourceLocation where;
  std::string job;
  std::string role;
  std::string text;    // as written
  std::string reason;  // why it cannot be resolved before a run
};

struct WorkflowImages {
  std::vector<ImageUse> uses;  // in file order; one per matrix combination that differs
  std::vector<UnresolvedImage> unresolved;
};

WorkflowImages collect_images(const workflow::Workflow& workflow);

// The contexts the expressions of `text` read (github, matrix, inputs, ...), lower case, each
// once, in order of appearance; empty for a text without expressions.
std::vector<std::string> contexts_read(std::string_view text);

// An image on this host, as the engine resolves its tag.
struct HostImage {
  std::string image;
  bool present = false;
  std::string id;      // "sha256:…"
  std::string digest;  // "name@sha256:…", when the image came from (or was given) a registry
  bool pulled = false;
  // A pull that changed what the tag names: the digest (else the id) it named before.
  std::optional<std::string> moved_from;
  std::string error;  // why a pull failed ("" when it did not)
};

// Looks `image` up; with `pull`, pulls it first (pull policy always: a tag that moved is
// fetched again) and says whether it moved.
HostImage look_up_image(EngineCli& engine, const std::string& image, bool pull);

}  // namespace kiln::container
