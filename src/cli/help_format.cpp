#include "cli/help_format.hpp"

#include <sstream>
#include <vector>

#include "report/display_width.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

std::string leading_spaces(const std::string& line) {
    return line.substr(0, line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '));
}

// An example command (its continuation lines joined, its "# comment" apart),
// broken into lines ending " \" that keep each flag beside its value; the
// continuation lines are indented four more cells than the command. A comment
// that does not fit after the last line goes on a line of its own below it.
std::string fit_command(const std::string& command, const std::string& comment, std::size_t width) {
    const std::string first = leading_spaces(command), indent = first + "    ";
    std::vector<std::string> groups;  // "--flag value" stays on one line
    std::istringstream words(command);
    for (std::string word; words >> word;) {
        if (!groups.empty() && word[0] != '-' && groups.back()[0] == '-' && groups.back().find(' ') == std::string::npos) groups.back() += " " + word;
        else groups.push_back(word);
    }
    std::string out, current = first;
    bool empty = true;  // nothing on the current line yet
    for (const std::string& g : groups) {
        if (!empty && display_width(current) + 1 + display_width(g) + 2 > width) {
            out += current + " \\\n";
            current = indent + g;
        } else {
            current += (empty ? "" : " ") + g;
        }
        empty = false;
    }
    if (comment.empty()) return out + current + "\n";
    if (display_width(current) + 3 + display_width(comment) <= width) return out + current + "   " + comment + "\n";
    return out + current + "\n" + wrap_text(comment.substr(2), width, indent + "# ", indent + "# ");
}

// The example command that starts at lines[i] ("  kvplan ...", continued
// by lines ending in '\\'), refitted when any of its lines is too wide;
// `i` moves past it.
std::string fit_example(const std::vector<std::string>& lines, std::size_t& i, std::size_t width) {
    std::string out, joined, comment;
    bool too_wide = false;
    for (bool more = true; more && i < lines.size(); ++i) {
        std::string line = lines[i];
        out += line + "\n";
        too_wide = too_wide || display_width(line) > width;
        if (const std::size_t hash = line.find(" # "); hash != std::string::npos) {
            comment = line.substr(line.find_first_not_of(' ', hash));
            line = line.substr(0, hash);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        more = !line.empty() && line.back() == '\\';
        if (more) line.pop_back();
        joined += (joined.empty() ? line : " " + line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ')));
    }
    return too_wide ? fit_command(joined, comment, width) : out;
}

// `text` in lines of at most `width` cells, each prefixed by `indent`. Words
// break at spaces; a word wider than a line (a list of choices such as
// "auto|fp32|fp16|...") breaks after a '|', so no help line is wider than
// the limit.
std::string wrap_description(const std::string& text, std::size_t width, const std::string& indent) {
    struct Piece {
        std::string text;
        bool space_before;
    };
    std::vector<Piece> pieces;
    std::istringstream words(text);
    const std::size_t room = width - indent.size();
    for (std::string word; words >> word;) {
        bool space = true;
        while (display_width(word) > room && word.find('|') != std::string::npos) {
            std::size_t cut = word.rfind('|', room - 1);
            if (cut == std::string::npos) cut = word.find('|');
            pieces.push_back({word.substr(0, cut + 1), space});
            word = word.substr(cut + 1);
            space = false;
        }
        pieces.push_back({word, space});
    }
    std::string out, line = indent;
    bool empty = true;
    for (const Piece& p : pieces) {
        const std::size_t gap = !empty && p.space_before ? 1 : 0;
        if (!empty && display_width(line) + gap + display_width(p.text) > width) {
            out += line + "\n";
            line = indent;
            empty = true;
        }
        line += (!empty && p.space_before ? " " : "") + p.text;
        empty = false;
    }
    return out + line + "\n";
}

// The name column as CLI11 prints it (two spaces, padded to column_width_);
// the description wrapped under it, each of its own lines on a line of its own.
std::string two_columns(const std::string& name, const std::string& description, std::size_t column, std::size_t width) {
    std::string out = "  " + name;
    const std::string indent(column, ' ');
    if (description.empty()) return out + "\n";
    if (display_width(out) >= column) out += "\n" + indent;
    else out += std::string(column - display_width(out), ' ');
    std::istringstream lines(description);
    bool first = true;
    for (std::string line; std::getline(lines, line); first = false) {
        const std::string wrapped = wrap_description(line, width, indent);
        out += first ? wrapped.substr(column) : wrapped;  // the first line's indent is the padded name
    }
    return out;
}

}  // namespace

std::string fit_help_text(const std::string& text, std::size_t width) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::string out;
    for (std::size_t i = 0; i < lines.size();) {
        const std::string& line = lines[i];
        const std::string indent = leading_spaces(line);
        if (line.compare(indent.size(), 7, "kvplan ") == 0) {
            out += fit_example(lines, i, width);
            continue;
        }
        out += display_width(line) <= width ? line + "\n" : wrap_text(line.substr(indent.size()), width, indent, indent);
        ++i;
    }
    if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
    return out;
}

std::string FittedHelp::make_option(const CLI::Option* opt, bool is_positional) const {
    return two_columns(make_option_name(opt, is_positional) + make_option_opts(opt), make_option_desc(opt), column_width_, width_);
}

std::string FittedHelp::make_subcommand(const CLI::App* sub) const {
    return two_columns(sub->get_display_name(true), sub->get_description(), column_width_, width_);
}

std::string FittedHelp::make_description(const CLI::App* app) const {
    return fit_help_text(CLI::Formatter::make_description(app), width_);
}

std::string FittedHelp::make_usage(const CLI::App* app, std::string name) const {
    const std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    std::istringstream lines(usage);
    std::string out;
    for (std::string line; std::getline(lines, line);) out += wrap_text(line, width_, "", "       ");
    return out;
}

std::string FittedHelp::make_footer(const CLI::App* app) const {
    return fit_help_text(CLI::Formatter::make_footer(app), width_);
}

}  // namespace kvplan

namespace kvplan {

// --help-all indents each command's help by two cells (CLI11's
// make_expanded): it is fitted to two cells less.
std::string FittedHelp::make_expanded(const CLI::App* sub) const {
    width_ = kFitColumns - 2;
    std::string out = CLI::Formatter::make_expanded(sub);
    width_ = kFitColumns;
    return out;
}

}  // namespace kvplan
