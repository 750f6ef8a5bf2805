#include "validate/text_input.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace shardsim::validate {
namespace {

constexpr std::size_t kBuffer = std::size_t{1} << 20;

gzFile as_gz(void* p) {
  return static_cast<gzFile>(p);
}

}  // namespace

TextInput::TextInput(const std::filesystem::path& file) : file_(file.string()), buffer_(kBuffer) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw ConfigError(Location{file_, 0, 0}, "", "is a directory; expected a file");
  }
  errno = 0;
  gz_ = gzopen(file_.c_str(), "rb");
  if (gz_ == nullptr) {
    throw ConfigError(Location{file_, 0, 0}, "",
                      fmt::format("cannot open for reading: {}", errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(as_gz(gz_), static_cast<unsigned>(kBuffer));
  // gzdirect() is only known after the first read: fill now so that compressed() is right.
  try {
    (void)fill();
  } catch (...) {
    gzclose_r(as_gz(gz_));
    gz_ = nullptr;
    throw;
  }
  compressed_ = gzdirect(as_gz(gz_)) == 0;
}

TextInput::~TextInput() {
  if (gz_ != nullptr) gzclose_r(as_gz(gz_));
}

void TextInput::fail_gzip(const std::string& what) const {
  // Where zlib stopped in the compressed file, against its size: a cut copy stops at its end.
  const long at = gzoffset(as_gz(gz_));
  std::error_code ec;
  const auto size = std::filesystem::file_size(file_, ec);
  const std::string where = at >= 0 && !ec ? fmt::format(" at byte {} of {}", at, size) : std::string();
  throw ConfigError(Location{file_, 0, 0}, "",
                    fmt::format("damaged gzip file ({}{}); expected a complete .gz file (was the copy cut short?)", what, where));
}

bool TextInput::fill() {
  if (eof_) return false;
  const int n = gzread(as_gz(gz_), buffer_.data(), static_cast<unsigned>(buffer_.size()));
  int err = Z_OK;
  const char* message = gzerror(as_gz(gz_), &err);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    if (err == Z_ERRNO) {
      throw ConfigError(Location{file_, 0, 0}, "", fmt::format("read error: {}", std::strerror(errno)));
    }
    // gzerror's message starts with the path ("trace.json.gz: unexpected end of file").
    std::string what = message != nullptr ? message : "unknown zlib error";
    if (what.rfind(file_ + ": ", 0) == 0) what.erase(0, file_.size() + 2);
    fail_gzip(what);
  }
  pos_ = 0;
  size_ = static_cast<std::size_t>(n);
  if (n == 0) eof_ = true;
  return n > 0;
}

char TextInput::peek_char() {
  if (pos_ >= size_) (void)fill();
  return pos_ < size_ ? buffer_[pos_] : '\0';
}

void TextInput::advance() {
  if (pos_ >= size_ && !fill()) return;
  const char c = buffer_[pos_++];
  ++consumed_;
  if (c == '\n') {
    ++line_;
    column_ = 0;
  } else {
    ++column_;
  }
}

int TextInput::get() {
  if (pos_ >= size_ && !fill()) return -1;
  const auto c = static_cast<unsigned char>(buffer_[pos_]);
  advance();
  return c;
}

bool TextInput::at_end() {
  return pos_ >= size_ && !fill();
}

Location TextInput::location() const {
  // After a newline the column is 0: the error is at the end of the previous line's text.
  return Location{file_, line_, column_ == 0 ? 1 : column_};
}

}  // namespace shardsim::validate
