//! The filesystem seam: every file the store touches goes through
//! [`FileSystem`] and [`FsFile`], so that tests can put the fault-injecting
//! [`FaultFs`](crate::FaultFs) in place of the real [`StdFs`].

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

/// The directory operations the store needs.
///
/// Paths are those the store builds from the directory given to
/// [`DiskStore::open`](crate::DiskStore::open); an implementation need not
/// handle anything else. Every method reports failure as an
/// [`io::Error`], whose raw OS error (EIO, ENOSPC, ...) the store keeps in
/// its own errors.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates `dir` and its missing parents (`mkdir -p`).
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Creates the file `path` (truncating it if it exists) and opens it
    /// for reading and writing. Its name is durable only once its
    /// directory is synced with [`FileSystem::sync_dir`].
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;

    /// Opens the existing file `path` for reading and writing.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is no such file; whatever else
    /// the filesystem reports.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;

    /// Renames `from` to `to`, replacing `to`. Durable once the directory
    /// is synced.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file `path`. Durable once the directory is synced.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// The names of the files in `dir` (not their paths), in no order.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Makes the entries of `dir` (files created, renamed or removed in it)
    /// durable (`fsync` of the directory).
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Takes an exclusive lock on `path` (created if missing), held until
    /// the returned guard is dropped.
    ///
    /// # Errors
    /// [`io::ErrorKind::WouldBlock`] if the lock is held by another
    /// process or another open of the same path; whatever else the
    /// filesystem reports.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>>;
}

/// An open file.
pub trait FsFile: Send + Sync + Debug {
    /// Reads up to `buf.len()` bytes at `offset` and returns how many were
    /// read: fewer only at the end of the file.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Writes all of `buf` at `offset`, growing the file if needed. The
    /// data is durable only after [`FsFile::sync`]. On error, any prefix of
    /// `buf` may have been written.
    ///
    /// # Errors
    /// Whatever the filesystem reports (EIO, ENOSPC, ...).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;

    /// The size of the file in bytes.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn size(&self) -> io::Result<u64>;

    /// Truncates or extends (with zeros) the file to `len` bytes.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes the file at least `len` bytes long, with the blocks reserved
    /// where the filesystem supports it (`fallocate`), so that later
    /// writes inside it cannot fail for lack of space. The new bytes read
    /// as zeros.
    ///
    /// # Errors
    /// ENOSPC if there is not enough room; whatever else the filesystem
    /// reports.
    fn allocate(&self, len: u64) -> io::Result<()>;

    /// Makes the file's data durable (`fdatasync`).
    ///
    /// # Errors
    /// Whatever the filesystem reports. After a failure the data written
    /// since the last successful sync may be lost even though reads still
    /// return it: callers must not retry and trust a later success.
    fn sync(&self) -> io::Result<()>;
}

/// A lock taken with [`FileSystem::lock`]; dropping it releases the lock.
pub trait FsLock: Send + Sync + Debug {}

/// Reads the whole of `file`.
///
/// # Errors
/// Whatever the filesystem reports.
pub fn read_all(file: &dyn FsFile) -> io::Result<Vec<u8>> {
    let size = file.size()?;
    let len = usize::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large to read"))?;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = file.read_at(&mut buf[done..], done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    buf.truncate(done);
    Ok(buf)
}

/// The real filesystem, over [`std::fs`].
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(File);

#[derive(Debug)]
struct StdLock {
    /// Held for its lock, released when dropped (closing the descriptor).
    _file: File,
}

impl FsLock for StdLock {}

/// Linux's EOPNOTSUPP: `fallocate` is not supported by this filesystem.
const EOPNOTSUPP: i32 = 95;

impl FileSystem for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(StdFile(f)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(StdFile(f)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        // Called through the trait: std's own `File::try_lock` (Rust 1.89)
        // would shadow it, and our MSRV is older.
        match fs4::FileExt::try_lock(&f) {
            Ok(()) => Ok(Box::new(StdLock { _file: f })),
            Err(fs4::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the store is locked by another open",
            )),
            Err(fs4::TryLockError::Error(e)) => Err(e),
        }
    }
}

impl FsFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.0.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        match fs4::FileExt::allocate(&self.0, len) {
            Ok(()) => {}
            // Some filesystems cannot reserve blocks: a sparse extension
            // still gives the zeros recovery expects.
            Err(e) if e.raw_os_error() == Some(EOPNOTSUPP) => {}
            Err(e) => return Err(e),
        }
        if self.0.metadata()?.len() < len {
            self.0.set_len(len)?;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}
