#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whole-file reads with a size limit, and atomic writes.
enum ImageFile {
    /// The bytes of the regular file at `path`; throws `.fileTooLarge` beyond `QRImageReader.maximumFileSize`
    /// without reading it.
    static func contents(of path: String) throws(QRImageError) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .unreadableFile(path: path, reason: systemError()) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadableFile(path: path, reason: systemError()) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw .unreadableFile(path: path, reason: "not a regular file")
        }
        let size = Int(status.st_size)
        guard size <= QRImageReader.maximumFileSize else { throw .fileTooLarge(path: path, byteCount: size) }
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        while filled < size {
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + filled, size - filled)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .unreadableFile(path: path, reason: systemError()) }
            if count == 0 { break }  // The file shrank while we read it: parse what is there.
            filled += count
        }
        return Array(bytes.prefix(filled))
    }

    /// Writes `bytes` to a temporary file next to `path`, flushes it, sets mode 0644 and renames it over `path`,
    /// so readers see the old file or the whole new one. The temporary file is removed on failure.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(QRImageError) {
        var template = Array((path + ".tmp-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .unwritableFile(path: path, reason: systemError()) }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        do {
            defer { close(descriptor) }
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { buffer in
                    write(descriptor, buffer.baseAddress! + written, bytes.count - written)
                }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { throw QRImageError.unwritableFile(path: path, reason: systemError()) }
                written += count
            }
            guard fchmod(descriptor, 0o644) == 0, fsync(descriptor) == 0 else {
                throw QRImageError.unwritableFile(path: path, reason: systemError())
            }
        }
        guard rename(temporary, path) == 0 else { throw .unwritableFile(path: path, reason: systemError()) }
        renamed = true
    }

    /// `strerror(errno)`.
    private static func systemError() -> String {
        String(cString: strerror(errno))
    }
}
