/// An error with a stable `code` and free text for people: two are equal, and hash alike, when their codes are,
/// whatever the text says. Tests and callers match on the code; the text may change.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    associatedtype Code: Hashable & Sendable
    /// The kind of failure.
    var code: Code { get }
}

extension CodedError {
    /// Compares codes only.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
