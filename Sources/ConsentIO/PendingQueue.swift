import Foundation
import JSON
import PasskeyFilesIO
import PasskeyProvider

#if canImport(Glibc)
    import Glibc
#endif

/// Why the queue of pending requests cannot be used or a request cannot be answered: one sentence for a person.
public struct PendingQueueError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    /// The request is not there, or no longer (`ExitStatus.notFound`).
    public var notFound: Bool

    public init(_ message: String, notFound: Bool = false) {
        self.message = message
        self.notFound = notFound
    }

    public var description: String { message }
}

/// The requests waiting for `passkey approve ID` / `passkey deny ID`: `ID.json` files in
/// `$XDG_RUNTIME_DIR/passkey/pending` (the directory 0700 and each file 0600, this user's only), and `ID.answer`
/// beside a request once it is answered. The service that queued a request waits for its answer and removes both;
/// an expired request is removed by whoever sees it first, and answering it is refused.
public struct PendingQueue: Sendable {
    public let directory: URL
    /// The largest request or answer file read.
    static let limit = 64 * 1024

    public init(directory: URL) { self.directory = directory }

    /// The queue under `environment`'s `XDG_RUNTIME_DIR`; nil when it is unset or not absolute.
    public init?(environment: [String: String]) {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        self.init(directory: URL(fileURLWithPath: runtime).appendingPathComponent("passkey/pending"))
    }

    /// The error for a command run without `XDG_RUNTIME_DIR`.
    public static let noRuntimeDirectory = PendingQueueError(
        "XDG_RUNTIME_DIR is not set, so there is no private place for pending requests")

    func requestFile(_ id: String) -> URL { directory.appendingPathComponent("\(id).json") }
    func answerFile(_ id: String) -> URL { directory.appendingPathComponent("\(id).answer") }

    /// Creates the directory 0700 if needed, and refuses one that is not this user's alone.
    func prepare() throws(PendingQueueError) {
        do {
            try OwnerOnlyFile.makePrivateDirectory(directory)
        } catch {
            throw PendingQueueError(error.description)
        }
        try checkDirectory()
    }

    private func checkDirectory() throws(PendingQueueError) {
        var info = stat()
        guard lstat(directory.path, &info) == 0 else {
            throw PendingQueueError("\(directory.path): cannot examine it: \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw PendingQueueError("\(directory.path): it is not a directory")
        }
        guard info.st_uid == geteuid() else { throw PendingQueueError("\(directory.path): it belongs to another user") }
        guard info.st_mode & 0o077 == 0 else {
            throw PendingQueueError(
                "\(directory.path): others may use it (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 it")
        }
    }

    /// Queues `request` (a new file; never replaces one).
    public func add(_ request: PendingConsent) throws(PendingQueueError) {
        try prepare()
        try publish(request.json.serialized(), at: requestFile(request.id))
    }

    /// Puts `bytes` at `url` whole or not at all, never replacing a file there: written to a temporary 0600 file
    /// beside it (a name no reader takes), then linked into place, so that a reader never sees a file half
    /// written (and takes it for a damaged one).
    func publish(_ bytes: [UInt8], at url: URL) throws(PendingQueueError) {
        var generator = SystemRandomNumberGenerator()
        let temporary = directory.appendingPathComponent(
            ".\(url.lastPathComponent).\(String(generator.next(), radix: 16)).tmp")
        do {
            try OwnerOnlyFile.create(bytes, at: temporary)
        } catch {
            throw PendingQueueError(error.description)
        }
        defer { _ = unlink(temporary.path) }
        guard link(temporary.path, url.path) == 0 else {
            let error = errno
            if error == EEXIST { throw PendingQueueError("\(url.path): it already exists; not replacing it") }
            throw PendingQueueError("\(url.path): cannot create it: \(String(cString: strerror(error)))")
        }
    }

    /// The requests waiting at `now`, soonest to expire first; expired and damaged ones are removed on the way.
    /// No directory is no request.
    public func list(now: Double) throws(PendingQueueError) -> [PendingConsent] {
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        try checkDirectory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var requests: [PendingConsent] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            guard PendingConsent.isID(id) else { continue }
            guard let request = try? read(id) else {
                remove(id)
                continue
            }
            if request.isExpired(now: now) {
                remove(id)
                continue
            }
            requests.append(request)
        }
        return requests.sorted { ($0.expires, $0.id) < ($1.expires, $1.id) }
    }

    /// The request `id`, nil when there is none; a damaged file is an error.
    func read(_ id: String) throws(PendingQueueError) -> PendingConsent? {
        let bytes: [UInt8]?
        do {
            bytes = try OwnerOnlyFile.read(requestFile(id), limit: Self.limit)
        } catch {
            throw PendingQueueError(error.description)
        }
        guard let bytes else { return nil }
        guard let request = PendingConsent(json: bytes), request.id == id else {
            throw PendingQueueError("\(requestFile(id).path): it is not a pending request")
        }
        return request
    }

    /// Answers request `id` at `now` with what `decide` makes of it: refused when there is no such request or it
    /// has expired (it is then removed), or when it has been answered already.
    public func answer(
        _ id: String, now: Double, decide: (PendingConsent) -> Result<PendingAnswer, PendingRefusal>
    ) throws(PendingQueueError) -> PendingConsent {
        guard PendingConsent.isID(id) else { throw PendingQueueError(PendingRefusal.notAnID(id).description) }
        guard FileManager.default.fileExists(atPath: directory.path) else {
            throw PendingQueueError(PendingRefusal.notFound(id).description, notFound: true)
        }
        try checkDirectory()
        guard let request = try read(id) else {
            throw PendingQueueError(PendingRefusal.notFound(id).description, notFound: true)
        }
        guard !request.isExpired(now: now) else {
            remove(id)
            throw PendingQueueError(PendingRefusal.expired(id).description, notFound: true)
        }
        let answer: PendingAnswer
        switch decide(request) {
        case .success(let decided): answer = decided
        case .failure(let refusal): throw PendingQueueError(refusal.description)
        }
        guard !FileManager.default.fileExists(atPath: answerFile(id).path) else {
            throw PendingQueueError("request \(id) has been answered already")
        }
        do {
            try publish(answer.json.serialized(), at: answerFile(id))
        } catch {
            if FileManager.default.fileExists(atPath: answerFile(id).path) {
                throw PendingQueueError("request \(id) has been answered already")
            }
            throw error
        }
        return request
    }

    /// Where a queued request stands.
    enum Progress: Equatable {
        case waiting
        /// Answered (both files are removed by the look).
        case answered(PendingAnswer)
        /// Its file is gone (removed as expired) or its answer is damaged: there will be no answer.
        case gone
    }

    /// Where request `id` stands; an answer found is taken (both files removed).
    func progress(_ id: String) -> Progress {
        guard let bytes = try? OwnerOnlyFile.read(answerFile(id), limit: Self.limit) else {
            return FileManager.default.fileExists(atPath: requestFile(id).path) ? .waiting : .gone
        }
        remove(id)
        return PendingAnswer(json: bytes).map(Progress.answered) ?? .gone
    }

    /// Removes request `id` and its answer.
    public func remove(_ id: String) {
        try? OwnerOnlyFile.remove(requestFile(id))
        try? OwnerOnlyFile.remove(answerFile(id))
    }
}
