/// Why a QR code could not be encoded, rendered, written or read.
public enum QRImageError: Error, Hashable, Sendable {
    /// The text holds a NUL byte, which libqrencode's C-string API cannot carry.
    case textContainsNUL
    /// The text (this many UTF-8 bytes) does not fit a version 40 symbol at the chosen error correction level.
    case textTooLong(byteCount: Int)
    /// libqrencode failed for another reason (the `errno` it left).
    case encodingFailed(errno: Int32)
    /// A rendering parameter is out of range (its name and value).
    case parameterOutOfRange(name: String, value: Int)
    /// The image would have, or claims to have, more than `QRImageReader.maximumPixelCount` pixels.
    case imageTooLarge(width: Int, height: Int)
    /// The image has a zero (or negative) width or height.
    case imageEmpty(width: Int, height: Int)
    /// The pixel buffer does not hold `width × height` bytes (the count given).
    case pixelCountMismatch(expected: Int, actual: Int)
    /// The file could not be opened, read or examined (the path and the system's reason).
    case unreadableFile(path: String, reason: String)
    /// The file is larger than `QRImageReader.maximumFileSize` bytes (the path and its size).
    case fileTooLarge(path: String, byteCount: Int)
    /// The file could not be written (the path and the system's reason).
    case unwritableFile(path: String, reason: String)
    /// The file starts with neither the PNG signature nor a PGM magic number (`P2`, `P5`).
    case unknownFormat(path: String)
    /// libpng refused the PNG data (the path, or `nil` for bytes, and libpng's message).
    case invalidPNG(path: String?, reason: String)
    /// The PGM data breaks the Netpbm format (the path, or `nil` for bytes, and what is wrong).
    case invalidPGM(path: String?, reason: String)
    /// libpng could not encode the image (its message).
    case pngEncodingFailed(reason: String)
    /// zbar could not scan the image.
    case scannerFailed
    /// The image holds no QR code that zbar can read (the path).
    case noQRCode(path: String)
}

extension QRImageError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .textContainsNUL: "QR code text holds a NUL byte"
        case .textTooLong(let count): "QR code text of \(count) bytes does not fit a version 40 symbol"
        case .encodingFailed(let code): "libqrencode failed (errno \(code))"
        case .parameterOutOfRange(let name, let value): "\(name) \(value) is out of range"
        case .imageTooLarge(let width, let height):
            "image of \(width)×\(height) pixels exceeds the limit of \(QRImageReader.maximumPixelCount) pixels"
        case .imageEmpty(let width, let height): "image of \(width)×\(height) pixels is empty"
        case .pixelCountMismatch(let expected, let actual): "expected \(expected) gray pixels, got \(actual)"
        case .unreadableFile(let path, let reason): "cannot read \(path): \(reason)"
        case .fileTooLarge(let path, let count):
            "\(path) is \(count) bytes, more than the limit of \(QRImageReader.maximumFileSize)"
        case .unwritableFile(let path, let reason): "cannot write \(path): \(reason)"
        case .unknownFormat(let path): "\(path) is not a PNG or PGM image"
        case .invalidPNG(let path, let reason): "\(path ?? "PNG data") is not a valid PNG image: \(reason)"
        case .invalidPGM(let path, let reason): "\(path ?? "PGM data") is not a valid PGM image: \(reason)"
        case .pngEncodingFailed(let reason): "PNG encoding failed: \(reason)"
        case .scannerFailed: "the zbar scanner failed"
        case .noQRCode(let path): "no QR code found in \(path)"
        }
    }
}
