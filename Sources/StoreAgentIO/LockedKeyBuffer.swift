import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Key bytes in a page of their own that is locked in memory (`mlock`: never written to swap) and left out of core
/// dumps (`MADV_DONTDUMP`), wiped and unmapped when released.
final class LockedKeyBuffer: @unchecked Sendable {
    /// The page; only its first `count` bytes hold the key.
    private let page: UnsafeMutableRawPointer
    private let pageSize: Int
    let count: Int

    /// Copies `bytes` into a new locked page; an error when the page cannot be mapped or locked (`RLIMIT_MEMLOCK`).
    init(copying bytes: UnsafeRawBufferPointer) throws(AgentError) {
        pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard bytes.count <= pageSize,
            let mapped = mmap(nil, pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapped != UnsafeMutableRawPointer(bitPattern: -1)
        else { throw AgentError("cannot set memory aside for the key") }
        guard mlock(mapped, pageSize) == 0 else {
            let code = errno
            munmap(mapped, pageSize)
            throw AgentError("cannot lock the key's memory against swapping: \(AgentSocket.reason(code))")
        }
        _ = madvise(mapped, pageSize, MADV_DONTDUMP)
        page = mapped
        count = bytes.count
        page.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
    }

    /// Calls `body` with the key bytes.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: page, count: count))
    }

    deinit {
        explicit_bzero(page, pageSize)
        munlock(page, pageSize)
        munmap(page, pageSize)
    }
}
