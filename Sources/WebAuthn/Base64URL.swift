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
    public init?(base64URLEncoded text: String) {
        guard
            text.allSatisfy({
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "=")
            })
        else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(
            of: "_", with: "/")
        standard = standard.replacingOccurrences(of: "=", with: "")
        guard standard.count % 4 != 1 else { return nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { return nil }
        self = Array(data)
    }
}
