/// Why `JSONValue(parsing:limits:)` refused a text.
public enum JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The text is not JSON: `expected` is what the reader needed at byte `offset`, where it stopped.
    case malformed(offset: Int, expected: String)
    /// The text is longer than `JSONValue.Limits.maximumBytes`.
    case tooLarge(bytes: Int, limit: Int)

    /// `expected a value at byte 0`, `the text is 2000000 bytes; at most 1048576 are read`.
    public var description: String {
        switch self {
        case .malformed(let offset, let expected): "expected \(expected) at byte \(offset)"
        case .tooLarge(let bytes, let limit): "the text is \(bytes) bytes; at most \(limit) are read"
        }
    }
}
