/// Why bytes are not a command APDU.
public enum APDUError: Error, Hashable, Sendable {
    /// Fewer than the four header bytes CLA INS P1 P2.
    case missingHeader(Int)
    /// The body after the header matches none of the ISO/IEC 7816-4 cases (its length is given).
    case inconsistentBody(Int)
}

/// A CTAP1/U2F request: an ISO/IEC 7816-4 command APDU in short or extended length encoding
/// (FIDO U2F Raw Message Formats §3, CTAP 2.1 §11.2.9.1.1).
///
/// ```
/// CLA INS P1 P2                                  case 1
/// CLA INS P1 P2 Le                               case 2S
/// CLA INS P1 P2 Lc data                          case 3S (Lc 1…255)
/// CLA INS P1 P2 Lc data Le                       case 4S
/// CLA INS P1 P2 00 Le1 Le2                       case 2E
/// CLA INS P1 P2 00 Lc1 Lc2 data                  case 3E (Lc 1…65535)
/// CLA INS P1 P2 00 Lc1 Lc2 data Le1 Le2          case 4E
/// ```
public struct CommandAPDU: Hashable, Sendable {
    /// The class byte; CTAP1 uses 0x00.
    public var cla: UInt8
    /// The instruction byte (0x01 register, 0x02 authenticate, 0x03 version in CTAP1).
    public var ins: UInt8
    /// The first parameter byte.
    public var p1: UInt8
    /// The second parameter byte.
    public var p2: UInt8
    /// The command data (Lc bytes), empty when absent.
    public var data: [UInt8]
    /// The maximum response length Ne (an Le of zero means 256, or 65536 when extended); `nil` when absent.
    public var maximumResponseLength: Int?

    /// Parses a command APDU, rejecting bodies whose length fields do not add up.
    public init(bytes: [UInt8]) throws(APDUError) {
        guard bytes.count >= 4 else { throw .missingHeader(bytes.count) }
        (cla, ins, p1, p2) = (bytes[0], bytes[1], bytes[2], bytes[3])
        let body = bytes[4...]
        let count = body.count
        let first = body.first ?? 0
        if count == 0 {
            (data, maximumResponseLength) = ([], nil)
        } else if count == 1 {
            (data, maximumResponseLength) = ([], first == 0 ? 256 : Int(first))
        } else if first != 0 {
            let lc = Int(first)
            if count == 1 + lc {
                (data, maximumResponseLength) = (Array(body.dropFirst()), nil)
            } else if count == 2 + lc {
                let le = body.last ?? 0
                (data, maximumResponseLength) = (Array(body.dropFirst().dropLast()), le == 0 ? 256 : Int(le))
            } else {
                throw .inconsistentBody(count)
            }
        } else if count == 3 {
            let le = Int(body[5]) << 8 | Int(body[6])
            (data, maximumResponseLength) = ([], le == 0 ? 65536 : le)
        } else if count > 3 {
            let lc = Int(body[5]) << 8 | Int(body[6])
            guard lc > 0 else { throw .inconsistentBody(count) }
            if count == 3 + lc {
                (data, maximumResponseLength) = (Array(body.dropFirst(3)), nil)
            } else if count == 5 + lc {
                let le = Int(body[body.endIndex - 2]) << 8 | Int(body[body.endIndex - 1])
                (data, maximumResponseLength) = (Array(body.dropFirst(3).dropLast(2)), le == 0 ? 65536 : le)
            } else {
                throw .inconsistentBody(count)
            }
        } else {
            throw .inconsistentBody(count)
        }
    }
}

/// An ISO/IEC 7816-4 status word, the last two bytes of every CTAP1/U2F response.
public struct CTAP1StatusWord: RawRepresentable, Hashable, Sendable {
    /// SW1 SW2 as one number.
    public var rawValue: UInt16

    /// Wraps a status word.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// `SW_NO_ERROR`: success.
    public static let noError = CTAP1StatusWord(rawValue: 0x9000)
    /// `SW_CONDITIONS_NOT_SATISFIED`: user presence is required.
    public static let conditionsNotSatisfied = CTAP1StatusWord(rawValue: 0x6985)
    /// `SW_WRONG_DATA`: the key handle is not valid for this authenticator.
    public static let wrongData = CTAP1StatusWord(rawValue: 0x6A80)
    /// `SW_WRONG_LENGTH`: the request length is wrong or the APDU is malformed.
    public static let wrongLength = CTAP1StatusWord(rawValue: 0x6700)
    /// `SW_CLA_NOT_SUPPORTED`: the class byte is not 0x00.
    public static let classNotSupported = CTAP1StatusWord(rawValue: 0x6E00)
    /// `SW_INS_NOT_SUPPORTED`: the instruction is not supported.
    public static let instructionNotSupported = CTAP1StatusWord(rawValue: 0x6D00)

    /// SW1 SW2, big-endian: the bytes that end a response APDU.
    public var bytes: [UInt8] { [UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)] }

    /// The answer of an authenticator that implements no CTAP1/U2F instruction at all.
    ///
    /// A malformed APDU gets ``wrongLength``; a well-formed one with a class byte other than 0x00 gets
    /// ``classNotSupported``; any other gets ``instructionNotSupported`` (U2F_REGISTER, U2F_AUTHENTICATE and
    /// U2F_VERSION included, so hosts see that CTAP1 is unavailable). The checks run in this order, as in
    /// OpenSK's CTAP1 front end.
    public static func answeringWithoutCTAP1(_ request: [UInt8]) -> CTAP1StatusWord {
        guard let apdu = try? CommandAPDU(bytes: request) else { return .wrongLength }
        return apdu.cla == 0 ? .instructionNotSupported : .classNotSupported
    }
}
