"""What the layer check reads of C targets outside core/ and the backends (whose BUILD files give
it a `files` group): their sources and headers, and, where asked, the objects Bazel compiled them
to (nm of those gives the call graph between a program's files)."""

_Sources = provider(fields = ["files"])

def _sources_impl(target, ctx):
    own = []
    if target.label.workspace_name == "":  # this workspace's files, not CUDA's or CUnit's
        for attr in ("srcs", "hdrs", "textual_hdrs"):
            own += [f for f in getattr(ctx.rule.files, attr, []) if f.is_source]
    deps = [d[_Sources].files for d in getattr(ctx.rule.attr, "deps", []) if _Sources in d]
    return [_Sources(files = depset(own, transitive = deps))]

# The sources and headers of a C target and of the targets it depends on.
_sources = aspect(implementation = _sources_impl, attr_aspects = ["deps"])

def _layer_inputs_impl(ctx):
    sources = depset(transitive = [
        t[_Sources].files if _Sources in t else t.files  # a target, or a source file
        for t in ctx.attr.sources_of + ctx.attr.objects_of
    ])
    objects = depset(transitive = [t[OutputGroupInfo].compilation_outputs for t in ctx.attr.objects_of])
    return [DefaultInfo(
        files = objects,  # $(rootpaths) names the objects; the sources ride in the runfiles
        runfiles = ctx.runfiles(transitive_files = depset(transitive = [sources, objects])),
    )]

# layer_inputs(name, objects_of = [...], sources_of = [...]): the objects of the targets in
# objects_of (not of their dependencies: list each library whose files the check must see), and
# in the runfiles the sources and headers of every target named and of its dependencies.
layer_inputs = rule(
    implementation = _layer_inputs_impl,
    attrs = {
        "objects_of": attr.label_list(aspects = [_sources]),
        "sources_of": attr.label_list(aspects = [_sources], allow_files = True),
    },
)
