import Foundation

extension Array where Element == UInt8 {
    /// Unpadded base64url (RFC 4648 §5), as WebAuthn uses for challenges and credential IDs.
    public var base64URLEncodedString: String {
        Data(self).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url with or without padding; `nil` for anything else.
    ///
    /// Padding, when present, must complete the last group of four characters (`Zg==`, `Zm8=`);
    /// `=` anywhere else, characters outside the URL-safe alphabet and a lone final character are refused.
    public init?(base64URLEncoded text: String) {
        let padding = text.reversed().prefix(while: { $0 == "=" }).count
        let body = text.dropLast(padding)
        guard
            body.allSatisfy({
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_")
            })
        else { return nil }
        guard body.count % 4 != 1 else { return nil }
        if padding > 0 {
            guard padding <= 2, (body.count + padding) % 4 == 0 else { return nil }
        }
        var standard = body.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { return nil }
        self = Array(data)
    }

    /// Decodes unpadded base64url only in its one canonical form: no padding and no unused bits set, so that every
    /// accepted text re-encodes to itself (as Chromium writes contact IDs, `Base64UrlEncodePolicy::OMIT_PADDING`).
    public init?(canonicalBase64URLEncoded text: some StringProtocol) {
        let text = String(text)
        guard !text.contains("="), let bytes = [UInt8](base64URLEncoded: text), bytes.base64URLEncodedString == text
        else { return nil }
        self = bytes
    }
}
