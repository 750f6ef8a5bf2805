// A file read as a stream of characters for a streaming parser, gzip-compressed or not: traces
// are stored gzipped by PyTorch's tensorboard handler and by HTA, and reach hundreds of megabytes,
// so nothing here holds more than one buffer of the file. zlib's gzread tells a gzip stream from
// plain text by its magic bytes (1f 8b) and reads plain files as they are.
//
// It counts lines and columns of the (decompressed) text, so that a parser's error can say where.
// A truncated or corrupt gzip stream is a ConfigError naming the file, raised from get() when the
// broken part is reached.
//
//   TextInput in("trace.json.gz");
//   nlohmann::json::sax_parse(in.begin(), in.end(), &handler);   // in.location() on error
#pragma once

#include <cstddef>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shardsim::validate {

class TextInput {
 public:
  // Throws ConfigError naming the file if it cannot be opened.
  explicit TextInput(const std::filesystem::path& file);
  ~TextInput();
  TextInput(const TextInput&) = delete;
  TextInput& operator=(const TextInput&) = delete;

  // The next character, or -1 at the end of the text. Throws ConfigError for a damaged gzip stream.
  int get();
  // Whether the end was reached (after get() returned -1).
  [[nodiscard]] bool at_end();
  // Where the last character returned by get() is: line and column, 1-based.
  [[nodiscard]] Location location() const;
  [[nodiscard]] bool compressed() const { return compressed_; }
  [[nodiscard]] const std::string& file() const { return file_; }
  // Bytes of (decompressed) text read so far.
  [[nodiscard]] std::size_t consumed() const { return consumed_; }

  // An input iterator over the characters, for nlohmann::json::sax_parse(first, last, ...).
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = char;

    iterator() = default;
    explicit iterator(TextInput* in) : in_(in) {}
    char operator*() const { return in_->peek_char(); }
    iterator& operator++() {
      in_->advance();
      return *this;
    }
    void operator++(int) { in_->advance(); }
    friend bool operator==(const iterator& a, const iterator& b) { return a.done() == b.done(); }
    friend bool operator!=(const iterator& a, const iterator& b) { return !(a == b); }

   private:
    [[nodiscard]] bool done() const { return in_ == nullptr || in_->at_end(); }
    TextInput* in_ = nullptr;
  };
  [[nodiscard]] iterator begin() { return iterator(this); }
  [[nodiscard]] static iterator end() { return {}; }

 private:
  bool fill();  // reads the next buffer; false at the end of the text
  [[nodiscard]] char peek_char();
  void advance();
  [[noreturn]] void fail_gzip(const std::string& what) const;

  std::string file_;
  void* gz_ = nullptr;  // gzFile
  bool compressed_ = false;
  std::vector<char> buffer_;
  std::size_t pos_ = 0;
  std::size_t size_ = 0;
  bool eof_ = false;
  std::size_t consumed_ = 0;
  int line_ = 1;
  int column_ = 0;
};

}  // namespace shardsim::validate
