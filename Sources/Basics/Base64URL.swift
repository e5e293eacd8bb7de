import Foundation

extension Array where Element == UInt8 {
    /// Unpadded base64url (RFC 4648 §5), as WebAuthn uses for challenges and credential IDs.
    public var base64URLEncodedString: String {
        // Foundation's encoder, then the two characters and the padding swapped byte by byte: string searches
        // (`replacingOccurrences`) cost more than the encoding itself on every challenge and credential ID.
        var encoded = Array(Data(self).base64EncodedData())
        while encoded.last == UInt8(ascii: "=") { encoded.removeLast() }
        for index in encoded.indices {
            switch encoded[index] {
            case UInt8(ascii: "+"): encoded[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): encoded[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Decodes base64url with or without padding; `nil` for anything else.
    ///
    /// Padding, when present, must complete the last group of four characters (`Zg==`, `Zm8=`);
    /// `=` anywhere else, characters outside the URL-safe alphabet and a lone final character are refused.
    public init?(base64URLEncoded text: String) {
        var standard = Array(text.utf8)
        var padding = 0
        while standard.last == UInt8(ascii: "=") {
            standard.removeLast()
            padding += 1
        }
        let bodyCount = standard.count
        for index in standard.indices {
            switch standard[index] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                break
            case UInt8(ascii: "-"): standard[index] = UInt8(ascii: "+")
            case UInt8(ascii: "_"): standard[index] = UInt8(ascii: "/")
            default: return nil
            }
        }
        guard bodyCount % 4 != 1 else { return nil }
        if padding > 0 {
            guard padding <= 2, (bodyCount + padding) % 4 == 0 else { return nil }
        }
        standard += repeatElement(UInt8(ascii: "="), count: (4 - bodyCount % 4) % 4)
        guard let data = Data(base64Encoded: Data(standard)) else { return nil }
        self = Array(data)
    }

    /// Decodes base64url without padding, as browsers write it (`=` is refused rather than guessed at).
    public init?(unpaddedBase64URLEncoded text: some StringProtocol) {
        guard !text.utf8.contains(UInt8(ascii: "=")), let bytes = [UInt8](base64URLEncoded: String(text)) else {
            return nil
        }
        self = bytes
    }

    /// Decodes unpadded base64url only in its one canonical form: no padding and no unused bits set, so that every
    /// accepted text re-encodes to itself (as Chromium writes contact IDs, `Base64UrlEncodePolicy::OMIT_PADDING`).
    public init?(canonicalBase64URLEncoded text: some StringProtocol) {
        guard let bytes = [UInt8](unpaddedBase64URLEncoded: text), bytes.base64URLEncodedString == String(text) else {
            return nil
        }
        self = bytes
    }
}
