// Parses an SVG or XHTML string with expat (a real XML parser: "valid" means what browsers and
// tools accept, not what a hand check happens to allow) and counts what the tests look for.
#pragma once

#include <expat.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace shardsim::test {

struct XmlSummary {
  bool well_formed = false;
  std::string error;                    // expat's message and line when not well formed
  std::map<std::string, int> elements;  // element name -> count
  std::map<std::string, int> classes;   // "circle.frontier" -> count (each class token)
  std::vector<std::string> texts;       // text content of <text> elements, in order

  [[nodiscard]] int count(const std::string& name) const {
    const auto it = elements.find(name);
    return it == elements.end() ? 0 : it->second;
  }
  [[nodiscard]] int count_class(const std::string& name_dot_class) const {
    const auto it = classes.find(name_dot_class);
    return it == classes.end() ? 0 : it->second;
  }
};

inline XmlSummary check_xml(const std::string& text) {
  struct State {
    XmlSummary out;
    int in_text = 0;
    std::string current;
  } state;
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, &state);
  XML_SetElementHandler(
      p,
      [](void* data, const XML_Char* name, const XML_Char** attrs) {
        auto& s = *static_cast<State*>(data);
        ++s.out.elements[name];
        for (int i = 0; attrs[i] != nullptr; i += 2) {
          if (std::string(attrs[i]) != "class") continue;
          std::istringstream tokens(attrs[i + 1]);
          for (std::string t; tokens >> t;) ++s.out.classes[std::string(name) + "." + t];
        }
        if (std::string(name) == "text") {
          ++s.in_text;
          s.current.clear();
        }
      },
      [](void* data, const XML_Char* name) {
        auto& s = *static_cast<State*>(data);
        if (std::string(name) == "text" && s.in_text > 0) {
          --s.in_text;
          s.out.texts.push_back(s.current);
        }
      });
  XML_SetCharacterDataHandler(p, [](void* data, const XML_Char* chars, int len) {
    auto& s = *static_cast<State*>(data);
    if (s.in_text > 0) s.current.append(chars, static_cast<std::size_t>(len));
  });
  if (XML_Parse(p, text.data(), static_cast<int>(text.size()), 1) == XML_STATUS_ERROR) {
    state.out.error = std::string(XML_ErrorString(XML_GetErrorCode(p))) + " at line " + std::to_string(XML_GetCurrentLineNumber(p));
  } else {
    state.out.well_formed = true;
  }
  XML_ParserFree(p);
  return state.out;
}

}  // namespace shardsim::test
