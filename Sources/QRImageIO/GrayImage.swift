/// An 8-bit grayscale image, row-major, 0 black and 255 white: what zbar scans and the PNG writer writes.
public struct GrayImage: Hashable, Sendable {
    /// Columns.
    public let width: Int
    /// Rows.
    public let height: Int
    /// `width × height` samples, top row first.
    public let pixels: [UInt8]

    /// Wraps pixels; throws `.imageEmpty`, `.imageTooLarge` or `.pixelCountMismatch` when they do not describe an
    /// image of 1 to `QRImageReader.maximumPixelCount` pixels.
    public init(width: Int, height: Int, pixels: [UInt8]) throws(QRImageError) {
        let count = try Self.checkedPixelCount(width: width, height: height)
        guard pixels.count == count else { throw .pixelCountMismatch(expected: count, actual: pixels.count) }
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Reads a PNG or PGM file, telling them apart by their first bytes.
    public init(contentsOf path: String) throws(QRImageError) {
        let bytes = try ImageFile.contents(of: path)
        if bytes.starts(with: PNGCodec.signature) {
            self = try PNGCodec.decode(bytes, path: path)
        } else if bytes.starts(with: [UInt8(ascii: "P"), UInt8(ascii: "5")])
            || bytes.starts(with: [UInt8(ascii: "P"), UInt8(ascii: "2")])
        {
            self = try PGMParser.parse(bytes, path: path)
        } else {
            throw .unknownFormat(path: path)
        }
    }

    /// Decodes a PNG of any colour type and bit depth, composited on white when it has transparency.
    public init(pngBytes: [UInt8]) throws(QRImageError) {
        self = try PNGCodec.decode(pngBytes, path: nil)
    }

    /// Parses a binary (`P5`) or plain (`P2`) PGM image with a maxval of up to 65535, scaled to 8 bits.
    public init(pgmBytes: [UInt8]) throws(QRImageError) {
        self = try PGMParser.parse(pgmBytes, path: nil)
    }

    /// The image as an 8-bit grayscale PNG.
    public func pngBytes() throws(QRImageError) -> [UInt8] {
        try PNGCodec.encode(self)
    }

    /// `width × height`, after checking both are positive and the product is within the limit. Call it before
    /// allocating pixels for dimensions read from a file.
    static func checkedPixelCount(width: Int, height: Int) throws(QRImageError) -> Int {
        guard width > 0, height > 0 else { throw .imageEmpty(width: width, height: height) }
        let (count, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, count <= QRImageReader.maximumPixelCount else {
            throw .imageTooLarge(width: width, height: height)
        }
        return count
    }
}
