/// Why a provider service could not do its work, for a person: one sentence in their terms, an optional second one
/// saying what to do, and the exit status a command gives it (1 unless a command documents another).
///
/// Every service throws only this, so the executable renders failures one way, and tests compare messages without a
/// process.
public struct ProviderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, one sentence without a trailing period.
    public var message: String
    /// What the person can do about it, if anything useful can be said.
    public var hint: String?
    public var exitStatus: Int32

    public init(_ message: String, hint: String? = nil, exitStatus: Int32 = 1) {
        self.message = message
        self.hint = hint
        self.exitStatus = exitStatus
    }

    public var description: String { hint.map { "\(message)\n\($0)" } ?? message }
}
