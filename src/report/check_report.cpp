#include "report/check_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/gate/baseline.hpp"
#include "core/units.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

std::string figure_value_text(const FigureValue& v) {
    switch (v.state) {
        case FigureValue::State::Integer: return group_digits(v.integer);
        case FigureValue::State::Real: return fmt::format("{:.6g}", v.real);
        case FigureValue::State::Null: return "n/a";
        case FigureValue::State::Absent: return "-";
    }
    return "?";
}

std::string change_text(const FigureCheck& c) {
    if (c.verdict == Verdict::Unchanged) return "0";
    if (!c.relative_change) return "n/a";
    return fmt::format("{:+.2f}%", *c.relative_change * 100.0);
}

namespace {

bool passed(const CheckReport& r) {
    return r.exit_code == 0;
}

// What the gate says about a figure, --strict included.
std::string verdict_text(const CheckReport& r, const FigureCheck& c) {
    if (r.strict && c.verdict == Verdict::Improvement) return "improvement (stale baseline)";
    return verdict_name(c.verdict);
}

bool fails(const CheckReport& r, const FigureCheck& c) {
    return c.verdict == Verdict::Regression || (r.strict && c.verdict == Verdict::Improvement);
}

// "max_requests 102 -> 99 (-2.94%, tolerance 0.5%)"
std::string figure_sentence(const FigureCheck& c) {
    return fmt::format("{} {} -> {} ({}, tolerance {})", figure_spec(c.figure).key, figure_value_text(c.baseline), figure_value_text(c.current),
                       change_text(c), tolerance_text(c.tolerance_ppb));
}

// Wide (and Markdown): one row per figure, the scenario in the first column.
Table figure_table(const CheckReport& r, bool changed_only) {
    Table t({"scenario", "figure", "baseline", "current", "change", "verdict"}, 2);
    for (const ScenarioCheck& s : r.checks) {
        if (s.error) {
            t.add({s.name, "(not computed)", "", "", "", "error"});
            continue;
        }
        for (const FigureCheck& c : s.figures) {
            if (changed_only && c.verdict == Verdict::Unchanged) continue;
            t.add(
                {s.name, figure_spec(c.figure).key, figure_value_text(c.baseline), figure_value_text(c.current), change_text(c), verdict_text(r, c)});
        }
    }
    return t;
}

// Fitted to 100 columns: each scenario's name heads its figures, so that the
// longest name does not widen every row.
Table fit_figure_table(const CheckReport& r, bool changed_only) {
    Table t({"figure", "baseline", "current", "change", "verdict"}, 1);
    for (const ScenarioCheck& s : r.checks) {
        std::vector<const FigureCheck*> shown;
        for (const FigureCheck& c : s.figures)
            if (!changed_only || c.verdict != Verdict::Unchanged) shown.push_back(&c);
        if (!s.error && shown.empty()) continue;
        t.add_heading(s.name);
        if (s.error) t.add({"  (not computed)", "", "", "", "error"});
        for (const FigureCheck* c : shown)
            t.add({std::string("  ") + figure_spec(c->figure).key, figure_value_text(c->baseline), figure_value_text(c->current), change_text(*c),
                   verdict_text(r, *c)});
    }
    return t;
}

// "4 scenarios, 24 figures: 8 regressions, 16 unchanged": the counts that
// are not zero (regressions always), so the summary line fits 100 columns.
std::string counts_text(const CheckSummary& s) {
    auto plural = [](std::int64_t n, const char* one, const char* many) { return fmt::format("{} {}", group_digits(n), n == 1 ? one : many); };
    std::string out = plural(s.scenarios, "scenario", "scenarios") + ", " + plural(s.figures, "figure", "figures") + ": " +
                      plural(s.regressions, "regression", "regressions");
    if (s.improvements > 0) out += ", " + plural(s.improvements, "improvement", "improvements");
    if (s.errors > 0) out += ", " + plural(s.errors, "error", "errors");
    if (s.unchanged > 0) out += ", " + group_digits(s.unchanged) + " unchanged";
    if (s.within > 0) out += ", " + group_digits(s.within) + " within tolerance";
    return out;
}

// JUnit XML: markup_text (report/printable.hpp), an apostrophe as &apos; and
// a message's line breaks as character references, which an attribute value
// needs to keep them.
std::string xml_escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\n') out += "&#10;";
        else if (c == '\'') out += "&apos;";
        else out += markup_text(std::string_view(&c, 1));
    }
    return out;
}

std::string github_command(const char* kind, const CheckReport& r, int line, const std::string& title, const std::string& message) {
    std::string props = "file=" + github_property(r.baseline_path);
    if (line > 0) props += fmt::format(",line={}", line);
    props += ",title=" + github_property(title);
    return fmt::format("::{} {}::{}\n", kind, props, github_data(message));
}

// A commit hash as `git log --oneline` shortens it.
std::string short_hash(const std::string& hash) {
    return hash.substr(0, 12);
}

std::string build_text(const KvplanBuild& b) {
    return (b.version.empty() ? std::string("an unknown version") : b.version) + (b.commit.empty() ? "" : " (commit " + b.commit + ")");
}

// Where a model came from, as "resolved from ..." and "the baseline used ..." read.
std::string origin_text(const ModelProvenance& p) {
    switch (p.kind) {
        case ModelSourceKind::Preset: return "the bundled preset";
        case ModelSourceKind::HfCache: return "the HF cache" + (p.revision.empty() ? std::string() : " (rev " + short_hash(p.revision) + ")");
        case ModelSourceKind::File: return "a config file";
        case ModelSourceKind::Folder: return "a model folder";
        case ModelSourceKind::Gguf: return "a GGUF file";
        case ModelSourceKind::Manual: return "hand-built flags";
    }
    return "?";
}

std::string snapshot_text(const ModelProvenance& p) {
    return (p.repo_id.empty() ? std::string("?") : p.repo_id) + "@" + (p.revision.empty() ? std::string("?") : short_hash(p.revision));
}

std::string model_change_text(const ModelChange& c) {
    std::string out = c.model + ": ";
    if (!c.baseline) return out + "resolved from " + origin_text(c.current) + "; the baseline does not record how it resolved";
    std::vector<std::string> parts;
    if (c.resolution_changed) parts.push_back("resolved from " + origin_text(c.current) + " where the baseline used " + origin_text(*c.baseline));
    if (c.revision_changed) parts.push_back("resolved to " + snapshot_text(c.current) + " where the baseline used " + snapshot_text(*c.baseline));
    if (c.config_changed)
        parts.push_back("config changed (sha256 " + short_hash(c.baseline->config_sha256) + " -> " + short_hash(c.current.config_sha256) + ")");
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
    return out;
}

nlohmann::ordered_json provenance_json(const ModelProvenance& p) {
    nlohmann::ordered_json j;
    j["source"] = model_source_name(p.kind);
    j["repo_id"] = p.repo_id.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(p.repo_id);
    j["revision"] = p.revision.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(p.revision);
    j["config_sha256"] = p.config_sha256.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(p.config_sha256);
    return j;
}

}  // namespace

std::vector<std::string> provenance_notes(const ProvenanceCheck& p) {
    std::vector<std::string> out;
    if (!p.recorded) {
        out.push_back(
            "provenance not recorded: this baseline does not say which kvplan computed it or how its models resolved "
            "(schema version 1); `kvplan check --update` records it");
        return out;
    }
    if (p.kvplan_changed) out.push_back("kvplan changed: baseline by " + build_text(p.baseline_kvplan) + ", this is " + build_text(p.current_kvplan));
    for (const ModelChange& c : p.models) out.push_back(model_change_text(c));
    return out;
}

std::string check_summary_line(const CheckReport& r) {
    std::string verdict;
    if (r.updated) verdict = "baseline updated";
    else if (r.summary.errors > 0) verdict = "check FAILED (scenarios not computed)";
    else if (r.summary.regressions > 0) verdict = "check FAILED (capacity regression)";
    else if (!passed(r)) verdict = "check FAILED (improvements under --strict: update the baseline)";
    else verdict = "check passed";
    return fmt::format("{}: {}", verdict, counts_text(r.summary));
}

std::string render_check_text(const CheckReport& r) {
    const bool wide = r.width == Width::Wide;
    auto line = [&](const std::string& text, const std::string& rest) { return fit_line(text, r.width, "", rest); };
    std::string out =
        line(fmt::format("kvplan check: {}, tolerance {}{}", printable(r.baseline_path), tolerances_text(r.tolerances), r.strict ? ", strict" : ""),
             "  ") +
        "\n";
    if (r.changes_only && r.summary.figures == r.summary.unchanged && r.summary.errors == 0) out += "Every figure is unchanged.\n";
    else out += wide ? figure_table(r, r.changes_only).render_text(Width::Wide) : fit_figure_table(r, r.changes_only).render_text();
    std::string notes;
    for (const std::string& n : provenance_notes(r.provenance)) notes += fit_line("note: " + printable(n), r.width, "", "  ");
    std::string errors;
    for (const ScenarioCheck& s : r.checks)
        if (s.error) errors += line(fmt::format("error: scenario \"{}\": {}", printable(s.name), printable(*s.error)), "  ");
    return out + "\n" + notes + errors + line(check_summary_line(r), "  ");
}

std::string render_check_markdown(const CheckReport& r) {
    std::string out = fmt::format("## kvplan check: {}\n\n", passed(r) ? (r.updated ? "baseline updated" : "passed") : "FAILED");
    out += fmt::format("Baseline `{}`, tolerance {}{}: {}.\n\n", printable(r.baseline_path), tolerances_text(r.tolerances),
                       r.strict ? " (strict)" : "", counts_text(r.summary));
    for (const ScenarioCheck& s : r.checks)
        if (s.error) out += fmt::format("- **error** in `{}`: {}\n", printable(s.name), printable(*s.error));
    if (r.summary.errors > 0) out += "\n";
    const std::vector<std::string> notes = provenance_notes(r.provenance);
    for (const std::string& n : notes) out += fmt::format("- note: {}\n", printable(n));
    if (!notes.empty()) out += "\n";
    const bool changes = r.summary.regressions + r.summary.improvements + r.summary.within + r.summary.errors > 0;
    if (changes) out += "Changed figures:\n\n" + figure_table(r, true).render_markdown() + "\n";
    else out += "Every figure is unchanged.\n\n";
    out += fmt::format("<details><summary>All {} figures</summary>\n\n{}\n</details>\n", group_digits(r.summary.figures),
                       figure_table(r, false).render_markdown());
    return out;
}

// One annotation per scenario, naming every figure that moved: GitHub shows at
// most 10 annotations of each kind per step, so one per figure would hide
// scenarios behind the first few.
std::string render_check_github(const CheckReport& r) {
    std::string out;
    for (const std::string& n : provenance_notes(r.provenance)) out += github_command("notice", r, 0, "kvplan check: provenance", n);
    for (const ScenarioCheck& s : r.checks) {
        if (s.error) {
            out += github_command("error", r, s.line, "kvplan check: scenario not computed", "scenario \"" + s.name + "\": " + *s.error);
            continue;
        }
        std::string failed, improved;
        bool regression = false;
        for (const FigureCheck& c : s.figures) {
            const bool fails_here = c.verdict == Verdict::Regression || (r.strict && c.verdict == Verdict::Improvement);
            if (!fails_here && c.verdict != Verdict::Improvement) continue;
            std::string& list = fails_here ? failed : improved;
            list += (list.empty() ? "" : "; ") + figure_sentence(c);
            regression = regression || c.verdict == Verdict::Regression;
        }
        if (!failed.empty())
            out += github_command("error", r, s.line, regression ? "kvplan check: capacity regression" : "kvplan check: stale baseline (improvement)",
                                  s.name + ": " + failed + (regression ? "" : "; run kvplan check --update"));
        if (!improved.empty()) out += github_command("notice", r, s.line, "kvplan check: improvement", s.name + ": " + improved);
    }
    return out + check_summary_line(r) + "\n";
}

std::string render_check_junit(const CheckReport& r) {
    std::int64_t tests = 0, failures = 0, errors = 0;
    std::string cases;
    for (const ScenarioCheck& s : r.checks) {
        if (s.error) {
            ++tests;
            ++errors;
            cases += fmt::format(
                "    <testcase classname=\"kvplan.check\" name=\"{}\">\n      <error type=\"not computed\" message=\"{}\"/>\n    </testcase>\n",
                xml_escape(s.name), xml_escape(*s.error));
            continue;
        }
        for (const FigureCheck& c : s.figures) {
            ++tests;
            const std::string name = xml_escape(s.name + ": " + figure_spec(c.figure).key);
            if (fails(r, c)) {
                ++failures;
                cases += fmt::format(
                    "    <testcase classname=\"kvplan.check\" name=\"{}\">\n      <failure type=\"{}\" message=\"{}\"/>\n    </testcase>\n", name,
                    xml_escape(verdict_text(r, c)), xml_escape(figure_sentence(c)));
            } else {
                cases += fmt::format("    <testcase classname=\"kvplan.check\" name=\"{}\"/>\n", name);
            }
        }
    }
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuites name=\"kvplan check\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n", tests, failures, errors);
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\">\n", xml_escape(r.baseline_path), tests,
                       failures, errors);
    out += fmt::format(
        "    <properties>\n      <property name=\"tolerance\" value=\"{}\"/>\n      <property name=\"strict\" value=\"{}\"/>\n    </properties>\n",
        tolerances_text(r.tolerances), r.strict ? "true" : "false");
    out += cases;
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

std::string render_check_json(const CheckReport& r) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["baseline"] = r.baseline_path;
    j["tolerance_percent"] = static_cast<double>(r.tolerances.default_ppb) / 1e7;
    j["tolerance_percent_by_figure"] = nlohmann::ordered_json::object();
    for (const FigureSpec& f : kFigures) j["tolerance_percent_by_figure"][f.key] = static_cast<double>(r.tolerances.of(f.figure)) / 1e7;
    j["strict"] = r.strict;
    j["updated"] = r.updated;
    j["passed"] = passed(r);
    j["exit_code"] = r.exit_code;
    const CheckSummary& s = r.summary;
    j["summary"] = {{"scenarios", s.scenarios},       {"figures", s.figures},         {"unchanged", s.unchanged}, {"within_tolerance", s.within},
                    {"improvements", s.improvements}, {"regressions", s.regressions}, {"errors", s.errors}};
    const ProvenanceCheck& p = r.provenance;
    nlohmann::ordered_json prov;
    prov["recorded"] = p.recorded;
    auto build = [](const KvplanBuild& b) { return nlohmann::ordered_json{{"version", b.version}, {"commit", b.commit}}; };
    prov["kvplan_baseline"] = p.recorded ? build(p.baseline_kvplan) : nlohmann::ordered_json();
    prov["kvplan_current"] = build(p.current_kvplan);
    prov["kvplan_changed"] = p.kvplan_changed;
    prov["models"] = nlohmann::ordered_json::array();
    for (const ModelChange& c : p.models) {
        nlohmann::ordered_json m;
        m["model"] = c.model;
        m["baseline"] = c.baseline ? provenance_json(*c.baseline) : nlohmann::ordered_json();
        m["current"] = provenance_json(c.current);
        m["resolution_changed"] = c.resolution_changed;
        m["revision_changed"] = c.revision_changed;
        m["config_changed"] = c.config_changed;
        prov["models"].push_back(m);
    }
    prov["notes"] = provenance_notes(p);
    j["provenance"] = prov;
    j["scenarios"] = nlohmann::ordered_json::array();
    for (const ScenarioCheck& sc : r.checks) {
        nlohmann::ordered_json o;
        o["name"] = sc.name;
        o["line"] = sc.line;
        o["error"] = or_null(sc.error);
        o["figures"] = nlohmann::ordered_json::object();
        for (const FigureCheck& c : sc.figures) {
            nlohmann::ordered_json f;
            f["baseline"] = figure_value_json(c.baseline);
            f["current"] = figure_value_json(c.current);
            f["change_fraction"] = or_null(c.relative_change);
            f["verdict"] = verdict_name(c.verdict);
            f["fails"] = fails(r, c);
            o["figures"][figure_spec(c.figure).key] = f;
        }
        j["scenarios"].push_back(o);
    }
    return json_text(j);
}

}  // namespace kvplan
