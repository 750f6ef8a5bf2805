#include "core/xml.hpp"

namespace shardsim {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((c < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || c == 0x7F) {
          out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace shardsim
