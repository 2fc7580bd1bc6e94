// Role: implementation of the shared byte sources and the output file (see
// byte_stream.h). The sources and OutputFile were the UCIR reader's and
// writer's; they moved here unchanged but for seek() and size().
#include "formats/common/byte_stream.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <zstd.h>

namespace tracecorn::formats {

namespace {

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::size_t read(std::vector<std::uint8_t>& out, std::size_t want) override {
    const std::size_t n = std::min(want, bytes_.size() - pos_);
    out.insert(out.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(pos_),
               bytes_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
    pos_ += n;
    return n;
  }
  bool seek(std::uint64_t offset) override {
    if (offset > bytes_.size()) return false;
    pos_ = static_cast<std::size_t>(offset);
    return true;
  }
  std::optional<std::uint64_t> size() const override { return bytes_.size(); }
  std::uint64_t consumed() const override { return pos_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

class FileSource final : public ByteSource {
 public:
  explicit FileSource(std::FILE* file) : file_(file) {}
  ~FileSource() override { std::fclose(file_); }
  std::size_t read(std::vector<std::uint8_t>& out, std::size_t want) override {
    const std::size_t old = out.size();
    out.resize(old + want);
    const std::size_t n = std::fread(out.data() + old, 1, want, file_);
    out.resize(old + n);
    if (n == 0 && std::ferror(file_)) problem = std::string("read error: ") + std::strerror(errno);
    return n;
  }
  bool seek(std::uint64_t offset) override {
    const auto total = size();
    if (!total || offset > *total) return false;
    return fseeko(file_, static_cast<off_t>(offset), SEEK_SET) == 0;
  }
  std::optional<std::uint64_t> size() const override {
    struct stat status {};
    if (fstat(fileno(file_), &status) != 0 || !S_ISREG(status.st_mode)) return std::nullopt;
    return static_cast<std::uint64_t>(status.st_size);
  }
  std::uint64_t consumed() const override {
    const off_t at = ftello(file_);
    return at < 0 ? 0 : static_cast<std::uint64_t>(at);
  }

 private:
  std::FILE* file_;
};

// Bytes already read (while looking at the header), then the rest of `inner`.
class PrefixSource final : public ByteSource {
 public:
  PrefixSource(std::vector<std::uint8_t> prefix, std::unique_ptr<ByteSource> inner)
      : prefix_(std::move(prefix)), inner_(std::move(inner)) {}
  std::size_t read(std::vector<std::uint8_t>& out, std::size_t want) override {
    if (pos_ < prefix_.size()) {
      const std::size_t n = std::min(want, prefix_.size() - pos_);
      out.insert(out.end(), prefix_.begin() + static_cast<std::ptrdiff_t>(pos_),
                 prefix_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
      pos_ += n;
      return n;
    }
    const std::size_t n = inner_->read(out, want);
    if (problem.empty()) problem = inner_->problem;
    return n;
  }
  std::uint64_t consumed() const override { return inner_->consumed(); }  // the prefix came from it

 private:
  std::vector<std::uint8_t> prefix_;
  std::size_t pos_ = 0;
  std::unique_ptr<ByteSource> inner_;
};

// One zstd stream (our --compress zstd), decompressed as it is read.
class ZstdSource final : public ByteSource {
 public:
  explicit ZstdSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)), context_(ZSTD_createDCtx()) {
    if (!context_) {
      problem = "cannot create a zstd context";
      finished_ = true;
    }
  }
  ~ZstdSource() override { ZSTD_freeDCtx(context_); }
  std::uint64_t consumed() const override { return inner_->consumed(); }
  std::size_t read(std::vector<std::uint8_t>& out, std::size_t want) override {
    std::size_t produced = 0;
    while (produced < want && !finished_) {
      if (in_pos_ == in_.size() && !input_ended_) {
        in_.clear();
        in_pos_ = 0;
        if (inner_->read(in_, 1 << 16) == 0) {
          input_ended_ = true;
          problem = inner_->problem;
        }
      }
      ZSTD_inBuffer in{in_.data(), in_.size(), in_pos_};
      ZSTD_outBuffer chunk{buffer_.data(), buffer_.size(), 0};
      const std::size_t consumed_before = in.pos;
      last_ = ZSTD_decompressStream(context_, &chunk, &in);
      // 0: a frame is complete and flushed. (A later call with no input starts
      // waiting for another frame and returns non-zero: that is no truncation.)
      if (last_ == 0) frame_complete_ = true;
      else if (in.pos != consumed_before) frame_complete_ = false;
      in_pos_ = in.pos;
      if (ZSTD_isError(last_)) {
        problem = std::string("the zstd stream is corrupt (") + ZSTD_getErrorName(last_) + ")";
        finished_ = true;
        break;
      }
      out.insert(out.end(), buffer_.data(), buffer_.data() + chunk.pos);
      produced += chunk.pos;
      // No input left and the output not filled: the decoder holds nothing more.
      if (input_ended_ && in_pos_ == in_.size() && chunk.pos < buffer_.size()) {
        if (!frame_complete_ && problem.empty())
          problem = "the zstd stream ends early, at offset " + std::to_string(inner_->consumed()) +
                    " of the compressed file (a truncated file)";
        finished_ = true;
      }
    }
    return produced;
  }

 private:
  std::unique_ptr<ByteSource> inner_;
  ZSTD_DCtx* context_;
  std::vector<std::uint8_t> in_;
  std::size_t in_pos_ = 0;
  std::vector<std::uint8_t> buffer_ = std::vector<std::uint8_t>(ZSTD_DStreamOutSize());
  std::size_t last_ = 0;
  bool frame_complete_ = false;
  bool input_ended_ = false;
  bool finished_ = false;
};

}  // namespace

Expected<std::unique_ptr<ByteSource>> open_file_source(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file)
    return make_error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      std::string("cannot open: ") + std::strerror(errno), path);
  return std::unique_ptr<ByteSource>(std::make_unique<FileSource>(file));
}

std::unique_ptr<ByteSource> make_memory_source(std::vector<std::uint8_t> bytes) {
  return std::make_unique<MemorySource>(std::move(bytes));
}

std::unique_ptr<ByteSource> make_prefix_source(std::vector<std::uint8_t> prefix, std::unique_ptr<ByteSource> inner) {
  return std::make_unique<PrefixSource>(std::move(prefix), std::move(inner));
}

std::unique_ptr<ByteSource> make_zstd_source(std::unique_ptr<ByteSource> inner) {
  return std::make_unique<ZstdSource>(std::move(inner));
}

std::vector<std::uint8_t> read_head(const std::string& path, std::size_t bytes) {
  std::vector<std::uint8_t> head;
  auto source = open_file_source(path);
  if (!source) return head;
  std::unique_ptr<ByteSource> stream = std::move(*source);
  while (head.size() < sizeof kZstdMagic && stream->read(head, sizeof kZstdMagic - head.size()) > 0) {
  }
  if (head.size() == sizeof kZstdMagic && std::equal(std::begin(kZstdMagic), std::end(kZstdMagic), head.begin())) {
    stream = make_zstd_source(make_prefix_source(std::move(head), std::move(stream)));
    head.clear();
  }
  while (head.size() < bytes && stream->read(head, bytes - head.size()) > 0) {
  }
  return head;
}

struct OutputFile::ZstdContext {
  ZSTD_CCtx* context = nullptr;
  ~ZstdContext() { ZSTD_freeCCtx(context); }
};

Expected<std::unique_ptr<OutputFile>> OutputFile::open(const std::string& path, bool compress_zstd,
                                                       const ZstdCompression& compression) {
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "wbe");
  if (!file) return make_error(ErrorCode::kIo, std::string("cannot open for writing: ") + std::strerror(errno), path);
  ZstdContext* zstd = nullptr;
  if (compress_zstd) {
    zstd = new ZstdContext;
    zstd->context = ZSTD_createCCtx();
    const std::string refused = zstd->context ? configure_zstd(zstd->context, compression) : "out of memory";
    if (!refused.empty()) {
      delete zstd;
      if (path != "-") std::fclose(file);
      return make_error(ErrorCode::kInvalidArgument, "cannot set up zstd compression: " + refused, path);
    }
  }
  std::unique_ptr<OutputFile> output(new OutputFile(file, path != "-", zstd));
  if (zstd) {
    output->buffer_.resize(ZSTD_CStreamOutSize());
    output->staged_.reserve(kStagedBytes);
  }
  return output;
}

OutputFile::~OutputFile() {
  delete zstd_;
  if (file_ && owns_) std::fclose(file_);
}

std::string OutputFile::failure(int error) const {
  // What reached the file: its size when it is a regular one (stdio may still
  // have held some of the bytes handed to it), else what the stream accepted.
  struct stat status {};
  const std::uint64_t in_file = fstat(fileno(file_), &status) == 0 && S_ISREG(status.st_mode)
                                    ? static_cast<std::uint64_t>(status.st_size)
                                    : bytes_accepted_;
  return std::string(std::strerror(error)) + " after " + std::to_string(in_file) + " bytes were written";
}

std::string OutputFile::put(const std::uint8_t* bytes, std::size_t size) {
  const std::size_t accepted = std::fwrite(bytes, 1, size, file_);
  bytes_accepted_ += accepted;
  return accepted == size ? "" : failure(errno);
}

std::string OutputFile::write_raw(std::span<const std::uint8_t> bytes) {
  return bytes.empty() ? "" : put(bytes.data(), bytes.size());
}

std::string OutputFile::write(std::span<const std::uint8_t> bytes) {
  if (!zstd_) return write_raw(bytes);
  if (bytes.size() > kStagedBytes - staged_.size()) {
    if (auto error = compress_staged(); !error.empty()) return error;
    if (bytes.size() >= kStagedBytes) return compress(bytes, ZstdStep::kContinue);
  }
  staged_.insert(staged_.end(), bytes.begin(), bytes.end());
  return "";
}

std::string OutputFile::compress_staged() {
  if (staged_.empty()) return "";
  auto error = compress(staged_, ZstdStep::kContinue);
  staged_.clear();
  return error;
}

std::string OutputFile::compress(std::span<const std::uint8_t> bytes, ZstdStep step) {
  const ZSTD_EndDirective mode = step == ZstdStep::kEnd     ? ZSTD_e_end
                                 : step == ZstdStep::kFlush ? ZSTD_e_flush
                                                            : ZSTD_e_continue;
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  for (;;) {
    ZSTD_outBuffer out{buffer_.data(), buffer_.size(), 0};
    const std::size_t remaining = ZSTD_compressStream2(zstd_->context, &out, &in, mode);
    if (ZSTD_isError(remaining)) return std::string("zstd: ") + ZSTD_getErrorName(remaining);
    if (out.pos)
      if (auto error = put(buffer_.data(), out.pos); !error.empty()) return error;
    const bool done = mode == ZSTD_e_continue ? in.pos == in.size : remaining == 0;
    if (done) return "";
  }
}

std::string OutputFile::flush() {
  if (!seekable()) return "";
  if (zstd_) {
    if (auto error = compress_staged(); !error.empty()) return error;
    if (auto error = compress({}, ZstdStep::kFlush); !error.empty()) return error;
  }
  if (std::fflush(file_) != 0 || std::ferror(file_)) return failure(errno ? errno : EIO);
  return "";
}

bool OutputFile::seekable() const {
  struct stat status {};
  return fstat(fileno(file_), &status) == 0 && S_ISREG(status.st_mode);
}

std::string OutputFile::patch(std::uint64_t file_offset, std::span<const std::uint8_t> bytes) {
  if (!seekable()) return "the output is not a seekable file";
  if (std::fflush(file_) != 0) return std::strerror(errno);
  const off_t end = ftello(file_);
  if (end < 0 || fseeko(file_, static_cast<off_t>(file_offset), SEEK_SET) != 0) return std::strerror(errno);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) return std::strerror(errno);
  if (std::fflush(file_) != 0 || fseeko(file_, end, SEEK_SET) != 0) return std::strerror(errno);
  return "";
}

std::string OutputFile::close() {
  if (zstd_) {
    if (auto error = compress_staged(); !error.empty()) return error;
    if (auto error = compress({}, ZstdStep::kEnd); !error.empty()) return error;
  }
  if (std::fflush(file_) != 0 || std::ferror(file_)) return failure(errno ? errno : EIO);
  if (owns_) {
    const int status = std::fclose(file_);
    if (status != 0) {
      const int error = errno;
      file_ = nullptr;
      return std::string(std::strerror(error)) + " when closing, after " + std::to_string(bytes_accepted_) +
             " bytes were written";
    }
    file_ = nullptr;
  }
  return "";
}

}  // namespace tracecorn::formats
