// Small helpers shared by the hand-written SVG and HTML of plots.hpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardsim::sweep::svg {

// Escapes &, <, >, " and ' for text and attribute values.
[[nodiscard]] std::string escape(std::string_view s);

// Round tick values (1, 2 or 5 x a power of ten) covering [lo, hi], about `count` of them.
[[nodiscard]] std::vector<double> ticks(double lo, double hi, int count);

// A colour from green (t = 0) through yellow to orange-red (t = 1), light enough for black
// text (ColorBrewer RdYlGn end points #66bd63, #ffffbf, #f46d43).
[[nodiscard]] std::string ramp(double t);

// "2.946 s", "0.0123 s", "61.2 GiB": four significant digits for seconds, one decimal for GiB
// (MiB below 1 GiB).
[[nodiscard]] std::string seconds(double s);
[[nodiscard]] std::string gib(double bytes);

// Approximate width in pixels of `text` at `font_px` in a sans-serif font, for layout.
[[nodiscard]] double text_width(std::string_view text, double font_px);

}  // namespace shardsim::sweep::svg
