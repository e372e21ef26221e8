//! The FUSE floor: an in-memory filesystem that keeps names and sizes and
//! throws the data away, mounted with mnemofs's own options. Reads return
//! zeros up to the file's size, from memory, so opening and reading a file
//! costs only the kernel round trips.
//!
//! Creating a file through any FUSE mount costs the same kernel round trips
//! (a lookup of the new name, the create, each write, then a release), and
//! on some machines waking the daemon and waking the caller again cost far
//! more than the work a local filesystem does. Timing this filesystem next
//! to mnemofs, in the same run, tells how much of the mount's cost is its
//! own and how much any FUSE filesystem would pay on this machine.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use super::{READY_TIMEOUT, is_mounted, stop_server};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyWrite, Request, SessionACL, WriteFlags,
};

/// What reads return: more than the kernel asks for at once.
static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

/// Same attribute and entry lifetime as mnemofs's default.
const TTL: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Tree {
    nodes: HashMap<u64, FileAttr>,
    names: HashMap<(u64, OsString), u64>,
    next: u64,
}

/// The filesystem itself.
pub struct NullFs {
    tree: Mutex<Tree>,
}

fn attr(ino: u64, kind: FileType, perm: u16) -> FileAttr {
    let now = SystemTime::now();
    FileAttr {
        ino: INodeNo(ino),
        size: 0,
        blocks: 0,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind,
        perm,
        nlink: if kind == FileType::Directory { 2 } else { 1 },
        // SAFETY: getuid/getgid cannot fail.
        uid: unsafe { libc::getuid() },
        gid: unsafe { libc::getgid() },
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl NullFs {
    fn new() -> NullFs {
        let mut tree = Tree {
            next: 2,
            ..Tree::default()
        };
        tree.nodes.insert(1, attr(1, FileType::Directory, 0o755));
        NullFs {
            tree: Mutex::new(tree),
        }
    }

    fn add(
        &self,
        parent: INodeNo,
        name: &OsStr,
        kind: FileType,
        mode: u32,
    ) -> Result<FileAttr, Errno> {
        let mut tree = self.tree.lock().map_err(|_| Errno::EIO)?;
        let key = (parent.0, name.to_os_string());
        if tree.names.contains_key(&key) {
            return Err(Errno::EEXIST);
        }
        let ino = tree.next;
        tree.next += 1;
        let a = attr(ino, kind, (mode & 0o7777) as u16);
        tree.nodes.insert(ino, a);
        tree.names.insert(key, ino);
        Ok(a)
    }
}

impl Filesystem for NullFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Ok(tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        match tree
            .names
            .get(&(parent.0, name.to_os_string()))
            .and_then(|ino| tree.nodes.get(ino))
        {
            Some(a) => reply.entry(&TTL, a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let Ok(tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        match tree.nodes.get(&ino.0) {
            Some(a) => reply.attr(&TTL, a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        match self.add(parent, name, FileType::Directory, mode) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        // Write-only opens write directly, as mnemofs's do.
        let open = if flags & libc::O_ACCMODE == libc::O_WRONLY {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::empty()
        };
        match self.add(parent, name, FileType::RegularFile, mode) {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), open),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let Ok(mut tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        if let Some(a) = tree.nodes.get_mut(&ino.0) {
            a.size = a.size.max(offset + data.len() as u64);
        }
        reply.written(data.len() as u32);
    }

    fn open(&self, _req: &Request, _ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        // As mnemofs's opens of an unchanged file: keep the page cache.
        let open = if flags.0 & libc::O_ACCMODE == libc::O_WRONLY {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        };
        reply.opened(FileHandle(0), open);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Ok(tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        let Some(a) = tree.nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let len = a.size.saturating_sub(offset).min(u64::from(size)) as usize;
        drop(tree);
        reply.data(&ZEROS[..len.min(ZEROS.len())]);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // As mnemofs: no flush round trip at close.
        reply.error(Errno::ENOSYS);
    }
}

/// The environment variable that turns the bench binary into the floor
/// server: it then serves `NullFs` at the given mountpoint until unmounted.
pub const SERVE_ENV: &str = "MNEMOFS_BENCH_NULLFS";

/// Serves `NullFs` at `mountpoint` in this process until it is unmounted,
/// with mnemofs's default mount options.
pub fn serve(mountpoint: &Path) -> io::Result<()> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("nullfs".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    // As mnemofs's owner-only mount, run by the same user.
    if mnemofs::fs::kernel_checks_permissions(false) {
        config.mount_options.push(MountOption::DefaultPermissions);
    }
    config.acl = SessionACL::Owner;
    config.n_threads = Some(2);
    config.clone_fd = true;
    fuser::Session::new(NullFs::new(), mountpoint, &config)?.run()
}

/// A `NullFs` served by a child process, as mnemofs is: a switch between
/// the caller and a server in another process costs more than a switch
/// between threads. Dropping it unmounts.
pub struct NullMount {
    child: Child,
    mountpoint: PathBuf,
}

impl NullMount {
    /// Starts the floor server at `mountpoint` and waits until it is mounted.
    pub fn start(mountpoint: &Path) -> io::Result<NullMount> {
        let child = Command::new(std::env::current_exe()?)
            .env(SERVE_ENV, mountpoint)
            .stdin(Stdio::null())
            .spawn()?;
        let mut mount = NullMount {
            child,
            mountpoint: mountpoint.to_path_buf(),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !is_mounted(mountpoint) {
            if let Ok(Some(status)) = mount.child.try_wait() {
                return Err(io::Error::other(format!(
                    "the floor server exited with {status}"
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other("the floor server did not mount in time"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(mount)
    }
}

impl Drop for NullMount {
    fn drop(&mut self) {
        stop_server(&mut self.child, &self.mountpoint, false);
    }
}
