/// A host name the list can answer for: lower-case ASCII labels of letters, digits and hyphens, joined by dots.
///
/// This is the URL standard's "valid domain" as WebAuthn asks of an RP ID (WebAuthn L3 §4 "RP ID": "a valid domain
/// string"), in the form a browser holds a host after IDNA: internationalised labels arrive already in their
/// `xn--` form, and must be well-formed, canonical Punycode of a non-ASCII label. Upper-case letters are lowered.
///
/// Refused, each with its reason: the empty string, more than 253 characters, a label over 63, empty labels
/// (`.com`, `a..b`), a trailing dot (`example.com.`: a fully qualified name the URL standard keeps distinct from
/// `example.com`; this client does not take it), non-ASCII text (give its `xn--` form) and any character other
/// than a letter, digit, hyphen or dot.
public struct DomainName: Hashable, Sendable, CustomStringConvertible {
    /// The longest name DNS carries, without a trailing dot (RFC 1034 §3.1).
    public static let maximumLength = 253
    /// The longest label (RFC 1034 §3.1).
    public static let maximumLabelLength = 63

    /// The name in lower case.
    public let text: String
    /// The labels, left to right, as slices of `text`.
    public let labels: [Substring]

    /// Checks and lowers `text`.
    public init(_ text: some StringProtocol) throws(DomainNameError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maximumLength else { throw .tooLong(bytes.count) }
        guard bytes.allSatisfy({ $0 < 0x80 }) else { throw .notASCII }
        for byte in bytes {
            switch byte.asciiLowercased {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
                UInt8(ascii: "."):
                continue
            default:
                throw .badCharacter(Character(Unicode.Scalar(byte)))
            }
        }
        guard bytes.last != UInt8(ascii: ".") else { throw .trailingDot }
        let lowered = asciiLowercased(text)
        let labels = lowered.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard !label.isEmpty else { throw .emptyLabel }
            guard label.utf8.count <= Self.maximumLabelLength else { throw .labelTooLong(String(label)) }
            if label.hasPrefix(Punycode.acePrefix) { try Self.checkPunycode(label) }
        }
        self.text = lowered
        self.labels = labels
    }

    public var description: String { text }

    /// The last `count` labels, as a name (`count` between 1 and `labels.count`).
    public func suffix(labels count: Int) -> Substring {
        precondition(count >= 1 && count <= labels.count, "a name has \(labels.count) labels, not \(count)")
        return text[labels[labels.count - count].startIndex...]
    }

    /// Whether `self` is `other` or ends with `.` and `other`: a suffix at a label boundary.
    public func isSubdomain(of other: DomainName) -> Bool {
        labels.count >= other.labels.count && labels.suffix(other.labels.count).elementsEqual(other.labels)
    }

    /// An `xn--` label must be what the Punycode encoder writes for some non-ASCII label: UTS #46 refuses labels
    /// that would not survive the round trip (`xn--abc-` for `abc`, upper-case digits are lowered above).
    private static func checkPunycode(_ label: Substring) throws(DomainNameError) {
        let encoded = label.dropFirst(Punycode.acePrefix.count)
        let decoded: [Unicode.Scalar]
        do {
            decoded = try Punycode.decode(encoded)
        } catch {
            throw .badPunycode(String(label), error.description)
        }
        guard decoded.contains(where: { !$0.isASCII }) else {
            throw .badPunycode(String(label), "it decodes to ASCII only")
        }
        guard (try? Punycode.encode(decoded)) == String(encoded) else {
            throw .badPunycode(String(label), "it is not the canonical encoding of what it decodes to")
        }
    }
}

/// Why a string is not a ``DomainName``.
public enum DomainNameError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Nothing at all.
    case empty
    /// More than 253 characters (the count).
    case tooLong(Int)
    /// A character outside ASCII: hosts are taken in their `xn--` form.
    case notASCII
    /// A leading dot or two dots in a row.
    case emptyLabel
    /// A dot at the end.
    case trailingDot
    /// A label of more than 63 characters.
    case labelTooLong(String)
    /// A character other than a letter, digit, hyphen or dot.
    case badCharacter(Character)
    /// An `xn--` label that is not canonical Punycode of a non-ASCII label, and why.
    case badPunycode(String, String)

    public var description: String {
        switch self {
        case .empty: "it is empty"
        case .tooLong(let count): "it is \(count) characters long, over DNS's \(DomainName.maximumLength)"
        case .notASCII: "it is not ASCII: give internationalised labels in their xn-- (Punycode) form"
        case .emptyLabel: "it has an empty label (a leading dot or two dots in a row)"
        case .trailingDot: "it ends with a dot"
        case .labelTooLong(let label):
            "its label \(label.prefix(20))… is \(label.utf8.count) characters, over DNS's "
                + "\(DomainName.maximumLabelLength)"
        case .badCharacter(let character):
            "it holds \(Self.shown(character)), which is not a letter, digit, hyphen or dot"
        case .badPunycode(let label, let reason): "its label \(label) is not valid Punycode: \(reason)"
        }
    }

    /// A character quoted, or named when quoting it would put a control character on the terminal.
    private static func shown(_ character: Character) -> String {
        character.unicodeScalars.allSatisfy { $0.value < 0x20 || $0.value == 0x7F }
            ? "a control character" : "'\(character)'"
    }
}
